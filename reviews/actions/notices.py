"""Facts found by looking rather than by a change: records falling due and
records changed outside Vetted (the daily scan, and the index sync's
reconcile), each told once through the outbox; and a reviewer's feed key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db import transaction
from django.utils import timezone

from notify.models import FeedKey, new_feed_secret

from ..models import Record
from ._audit import SystemActor, audit, log
from ._common import Actor, require_reviewer
from ._notify import tell_changed_outside, tell_due

SCANNER = SystemActor("notify-scan")


@dataclass(frozen=True)
class ScanResult:
    due: list[str]
    changed_outside: list[str]


def scan_for_notices(today: date | None = None) -> ScanResult:
    """Tell the reviewer of every approved record past its review date and
    every live record whose text no longer matches its approval, each fact
    once (a fact already told is skipped: the outbox row's key). Safe to run
    any number of times a day.

    No AuditEvent: looking changes no record, proposal or account (the
    write log is for changes; an agent's search, which may run the index
    sync, must not add to it). The outbox rows are the trace, and one log
    line with the ids once committed."""
    today = today or timezone.localdate()
    with transaction.atomic():
        due = [r.public_id for r in Record.objects.overdue(today).order_by("pk") if tell_due(r)]
        changed = [
            r.public_id
            for r in Record.objects.live().order_by("pk").iterator()
            if r.edited_since_approval and tell_changed_outside(r)
        ]
        if due or changed:
            _log_found("notify.scanned", SCANNER, due=due, changed_outside=changed)
        return ScanResult(due=due, changed_outside=changed)


def note_changed_outside(record_ids: list[int]) -> list[str]:
    """The index sync found these records' text no longer matching their
    approval: tell the reviewer (once per edited text), inside the caller's
    transaction when there is one. No AuditEvent (see scan_for_notices).
    Returns the public ids told."""
    if not record_ids:
        return []
    with transaction.atomic():
        told = [
            r.public_id
            for r in Record.objects.filter(pk__in=record_ids).live().order_by("pk")
            if r.edited_since_approval and tell_changed_outside(r)
        ]
        if told:
            _log_found("notify.changed_outside", SystemActor("index-sync"), changed_outside=told)
        return told


def _log_found(event: str, actor: SystemActor, **ids: list[str]) -> None:
    line = " ".join(f"{key}={','.join(values)}" for key, values in ids.items() if values)
    transaction.on_commit(lambda: log.info("%s actor=system:%s %s", event, actor.name, line))


def rotate_feed_key(*, actor: Actor) -> FeedKey:
    """A reviewer gets a new secret for their feed URL; the old URL stops
    working at once. One ``feed_key.rotated`` AuditEvent (never the key)."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        key, created = FeedKey.objects.select_for_update().get_or_create(user=reviewer)
        if not created:
            key.secret = new_feed_secret()
            key.created_at = timezone.now()
            key.save(update_fields=["secret", "created_at"])
        audit("feed_key.rotated", actor=reviewer, subject=reviewer, extra={"created": created})
        return key


def feed_key_of(user: Actor) -> FeedKey | None:
    """The reviewer's feed key, or None until one is made (read-only)."""
    pk = getattr(user, "pk", None)
    return FeedKey.objects.filter(user_id=pk).first() if isinstance(pk, int) else None
