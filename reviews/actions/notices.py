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
from ._audit import SystemActor, _audit
from ._common import Actor, _require_reviewer
from ._notify import _tell_changed_outside, _tell_due

SCANNER = SystemActor("notify-scan")


@dataclass(frozen=True)
class ScanResult:
    due: list[str]
    changed_outside: list[str]


def scan_for_notices(today: date | None = None) -> ScanResult:
    """Tell the reviewer of every approved record past its review date and
    every live record whose text no longer matches its approval, each fact
    once (a fact already told is skipped: the outbox row's key). Safe to run
    any number of times a day. One ``notify.scanned`` AuditEvent when it
    found something new, none otherwise (a scan that finds nothing changes
    nothing)."""
    today = today or timezone.localdate()
    with transaction.atomic():
        due = [r.public_id for r in Record.objects.overdue(today).order_by("pk") if _tell_due(r)]
        changed = [
            r.public_id
            for r in Record.objects.live().order_by("pk").iterator()
            if r.edited_since_approval and _tell_changed_outside(r)
        ]
        if due or changed:
            _audit(
                "notify.scanned",
                actor=SCANNER,
                subject=("record", due[0] if due else changed[0]),
                extra={"due": due, "changed_outside": changed},
            )
        return ScanResult(due=due, changed_outside=changed)


def note_changed_outside(record_ids: list[int]) -> list[str]:
    """The index sync found these records' text no longer matching their
    approval: tell the reviewer (once per edited text), inside the caller's
    transaction when there is one. One ``notify.changed_outside`` AuditEvent
    when something new was told. Returns the public ids told."""
    if not record_ids:
        return []
    with transaction.atomic():
        told = [
            r.public_id
            for r in Record.objects.filter(pk__in=record_ids).live().order_by("pk")
            if r.edited_since_approval and _tell_changed_outside(r)
        ]
        if told:
            _audit(
                "notify.changed_outside",
                actor=SystemActor("index-sync"),
                subject=("record", told[0]),
                extra={"changed_outside": told},
            )
        return told


def rotate_feed_key(*, actor: Actor) -> FeedKey:
    """A reviewer gets a new secret for their feed URL; the old URL stops
    working at once. One ``feed_key.rotated`` AuditEvent (never the key)."""
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        key, created = FeedKey.objects.select_for_update().get_or_create(user=reviewer)
        if not created:
            key.secret = new_feed_secret()
            key.created_at = timezone.now()
            key.save(update_fields=["secret", "created_at"])
        _audit("feed_key.rotated", actor=reviewer, subject=reviewer, extra={"created": created})
        return key


def feed_key_of(user: Actor) -> FeedKey | None:
    """The reviewer's feed key, or None until one is made (read-only)."""
    pk = getattr(user, "pk", None)
    return FeedKey.objects.filter(user_id=pk).first() if isinstance(pk, int) else None
