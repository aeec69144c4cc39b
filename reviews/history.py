"""What was true at a past moment: each record as it stood then ("as of"),
and which records' validity window holds a given day ("valid at").

A record's approved text never changes (a revision is a new record that
supersedes it), so the text shown for any moment is its approved version
(``Record.approved_version()``), never the row's current text. What changes
over time is its status, its review date and whether its text had been
changed outside Vetted; each is reconstructed here from the write log
(AuditEvent), the version chain those events name, and the outbox rows the
index sync writes when it first sees a changed text:

- status: approved from ``approved_at``; then, in order, each event that
  moved it (disputed, dispute cleared or closed, retired, superseded by a
  revision or a move, and an undo's restored statuses). When the events do
  not explain the row's current status (e.g. records imported with their
  history), a withholding current status is taken to have held all along
  (fail closed).
- review date and verification: the row's values, rolled back through each
  later ``record.verified`` (its ``previous_*``) and each later undo of one.
- changed outside Vetted: Vetted cannot know when someone edited the row
  behind its back, only when it first saw a changed text (the reconcile
  that runs before every search and the daily scan write a
  ``record.changed_outside`` outbox row, once per changed text) and when it
  last proved the text intact (approval, verify, restore). Between the two
  the edit may already have happened, so the record counts as edited from
  the last proof before the sighting: fail closed (``_edited_then``). So a
  record edited after the moment shows its approved text when Vetted proved
  it intact after the moment; otherwise it is withheld as "edited", and its
  changed text is never shown either way.

Whether the record was deliverable then is the domain's one rule,
``models.withhold_reason_of``, applied to those values with that moment's
date. Read-only; nothing here writes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Min, Q
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from notify.models import Event, OutboxEvent

from . import validation as v
from .errors import ValidationFailed
from .models import AuditEvent, Record, RecordStatus, withhold_reason_of

# The events that change a record's status, review date or text (see the module docstring).
_STATUS_EVENTS = (
    "record.disputed",
    "record.dispute_cleared",
    "proposal.rejected",
    "proposal.withdrawn",
    "record.retired",
    "proposal.accepted",
    "record.revised",
    "record.moved",
    "decision.undone",
)
_EVENTS = (*_STATUS_EVENTS, "record.verified", "record.restored")
_SUPERSEDING = ("record.revised", "record.moved", "proposal.accepted")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
CHAIN_MAX = 100  # longer version chains are treated as loops (fail safe)


@dataclass(frozen=True)
class Moment:
    """When to look from (``at``, the as_of: the state of Vetted then; None:
    now) and which day the validity window is judged on (``valid_on``, the
    valid_at; None: that moment's own day)."""

    at: datetime | None = None
    valid_on: date | None = None

    @property
    def today(self) -> date:
        return timezone.localdate(self.at) if self.at is not None else timezone.localdate()

    def as_dict(self) -> dict[str, str]:
        data = {}
        if self.at is not None:
            data["as_of"] = self.at.isoformat()
        if self.valid_on is not None:
            data["valid_at"] = self.valid_on.isoformat()
        return data


@dataclass
class Past:
    """One record at a moment. ``record`` is an unsaved copy of the row with
    the approved text, the status and review date it had then (None when it
    was not approved yet, or no approved text is left to show); ``reason``
    why it was withheld then (None: deliverable); ``successor`` the public id
    of the record that had superseded it by then."""

    record: Record | None
    reason: str | None
    successor: str = ""

    @property
    def space(self) -> str | None:
        """The space it was approved in (None: no reader may know of it)."""
        return self.record.space if self.record is not None else None


def instance_began() -> datetime | None:
    """The first moment this instance knows of: its first write or approval."""
    first_event = AuditEvent.objects.aggregate(first=Min("at"))["first"]
    first_record = Record.objects.aggregate(first=Min("approved_at"))["first"]
    known = [moment for moment in (first_event, first_record) if moment is not None]
    return min(known) if known else None


def clean_as_of(value: object, field: str = "as_of") -> datetime | None:
    """A past moment: an ISO 8601 date-time, or a date meaning the end of that
    day (so far, for today) in TIME_ZONE. Not in the future, not before the
    instance's first write; None for nothing."""
    moment = v.clean_moment(field, value)
    if moment is None:
        return None
    now = timezone.now()
    text = str(value).strip()
    # A date alone (parse_datetime reads one as midnight; it means the whole day here).
    day = parse_date(text) if _DATE_ONLY.fullmatch(text) else None
    if day is not None:  # a date: the end of that day (so far, for today)
        moment = now if day >= timezone.localdate(now) else end_of(day)
        if day > timezone.localdate(now):
            moment = moment + timedelta(days=1)  # only to be refused as in the future below
    began = instance_began()
    allowed = f"a past date or ISO 8601 date-time from {began:%Y-%m-%d %H:%M:%S %Z} to now" if began else ""
    if moment > now:
        raise ValidationFailed({field: f"got {text[:40]!r}, which is in the future; {allowed or 'a past moment'}"})
    if began is None:
        raise ValidationFailed({field: f"got {text[:40]!r}; this instance has no history yet (nothing approved)"})
    if moment < began:
        raise ValidationFailed({field: f"got {text[:40]!r}, before this instance's first write; {allowed}"})
    return moment


def clean_valid_at(value: object, field: str = "valid_at") -> date | None:
    """A day (ISO 8601 date, past or future) to judge validity windows on; None for nothing."""
    if value is None or value == "":
        return None
    day = None
    if isinstance(value, str) and len(value) <= 10:
        try:
            day = parse_date(value.strip())
        except ValueError:
            day = None
    if day is None:
        raise ValidationFailed({field: f"got {str(value)[:40]!r}; a date such as 2026-11-30 (YYYY-MM-DD)"})
    return day


def clean_moment(as_of: object = None, valid_at: object = None) -> Moment | None:
    """Both parameters at once (every problem reported together); None when neither is given."""
    errors: dict[str, str] = {}
    at = day = None
    try:
        at = clean_as_of(as_of)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    try:
        day = clean_valid_at(valid_at)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    if errors:
        raise ValidationFailed(errors)
    return Moment(at, day) if at is not None or day is not None else None


def at_moment(records: Iterable[Record], moment: Moment) -> dict[int, Past]:
    """Each record (by pk) as it stood at ``moment``. Two queries for any
    number of records (their events, their outbox rows)."""
    rows = {r.pk: r for r in records}
    if moment.at is None:
        return {pk: _now(record, moment) for pk, record in rows.items()}
    by_pid = {r.public_id: r for r in rows.values()}
    events = _events_of(list(by_pid))
    seen = _changed_outside_seen(list(by_pid))
    return {record.pk: _then(record, moment, moment.at, events, seen) for record in rows.values()}


def _now(record: Record, moment: Moment) -> Past:
    """valid_at alone: the row as it is, its window judged on another day."""
    approved = record.approved_version()
    if approved is None:
        return Past(None, "edited")
    reason = record.withhold_reason(moment.today, moment.valid_on)
    successor = ""
    if record.status == RecordStatus.SUPERSEDED and record.superseded_by_id:
        successor = Record.objects.filter(pk=record.superseded_by_id).values_list("public_id", flat=True).first() or ""
    return Past(_copy(record, approved, record.status, record.review_by, record.verified_at), reason, successor)


def _events_of(public_ids: list[str]) -> list[AuditEvent]:
    if not public_ids:
        return []
    named = (
        Q(record_ref__in=public_ids)
        | Q(extra__supersedes__in=public_ids)
        | Q(extra__retired__in=public_ids)
        | Q(extra__restored__has_any_keys=public_ids)
    )
    return list(AuditEvent.objects.filter(named, event_type__in=_EVENTS).order_by("at", "id"))


def _changed_outside_seen(public_ids: list[str]) -> dict[str, list[datetime]]:
    seen: dict[str, list[datetime]] = {}
    rows = OutboxEvent.objects.filter(event=Event.RECORD_CHANGED_OUTSIDE, subject_id__in=public_ids)
    for subject_id, created_at in rows.order_by("created_at").values_list("subject_id", "created_at"):
        seen.setdefault(subject_id, []).append(created_at)
    return seen


def _status_change(event: AuditEvent, pid: str) -> tuple[str, str] | None:
    """(the status ``event`` gave record ``pid``, its successor's id), or None."""
    extra, kind = event.extra or {}, event.event_type
    if kind in _SUPERSEDING and extra.get("supersedes") == pid:
        return RecordStatus.SUPERSEDED, event.record_ref
    if kind == "decision.undone":
        restored = extra.get("restored") or {}
        if pid in restored:
            return str(restored[pid]), ""
        return (RecordStatus.RETIRED, "") if extra.get("retired") == pid else None
    if kind == "proposal.accepted":
        return (RecordStatus.RETIRED, "") if extra.get("retired") == pid else None
    if event.record_ref != pid:
        return None
    if kind == "record.disputed":
        return RecordStatus.DISPUTED, ""
    if kind == "record.retired":
        return RecordStatus.RETIRED, ""
    closed = kind in ("proposal.rejected", "proposal.withdrawn") and extra.get("dispute_cleared")
    if kind == "record.dispute_cleared" or closed:
        return RecordStatus.APPROVED, ""
    return None


def _then(
    record: Record, moment: Moment, at: datetime, events: list[AuditEvent], seen: dict[str, list[datetime]]
) -> Past:
    pid = record.public_id
    if record.approved_at is None or record.approved_at > at:
        return Past(None, None)  # not approved yet: it did not exist for anyone
    approved = record.approved_version()
    if approved is None:
        return Past(None, "edited")  # no approved text left to show: withheld at every moment
    mine = [e for e in events if e.record_ref == pid or _status_change(e, pid) is not None]
    status: str = RecordStatus.APPROVED
    walked: str = RecordStatus.APPROVED
    successor = walked_successor = ""
    for event in mine:
        change = _status_change(event, pid)
        if change is None:
            continue
        walked, walked_successor = change
        if event.at <= at:
            status, successor = walked, walked_successor
    if walked != record.status and record.status != RecordStatus.APPROVED:
        status = record.status  # history the log does not explain: its withholding status all along
        successor = successor or walked_successor
    review_by, verified_at = _review_dates(record, mine, at)
    edited = _edited_then(record, mine, seen.get(pid, []), at)
    reason = withhold_reason_of(
        status=status,
        edited=edited,
        valid_from=record.valid_from,
        valid_until=record.valid_until,
        review_by=review_by,
        today=moment.today,
        valid_on=moment.valid_on,
    )
    return Past(_copy(record, approved, status, review_by, verified_at), reason, successor)


def _review_dates(record: Record, mine: list[AuditEvent], at: datetime) -> tuple[date, datetime | None]:
    """The review date and verification time at ``at``: the row's, rolled back through later events."""
    review_by, verified_at = record.review_by, record.verified_at
    by_id = {e.pk: e for e in mine}
    for event in reversed([e for e in mine if e.at > at and e.record_ref == record.public_id]):
        extra = event.extra or {}
        if event.event_type == "record.verified":
            review_by = _day(extra.get("previous_review_by"), review_by)
            verified_at = _moment(extra.get("previous_verified_at"))
        elif event.event_type == "decision.undone" and extra.get("restored_review_by"):
            undone = by_id.get(int(extra.get("undoes") or 0))  # the verify it undid: its values stood before the undo
            if undone is not None:
                review_by = _day((undone.extra or {}).get("review_by"), review_by)
                verified_at = undone.at
    return review_by, verified_at


def _edited_then(record: Record, mine: list[AuditEvent], seen: list[datetime], at: datetime) -> bool:
    """Whether the row's text may have differed from its approval at ``at``.

    Vetted cannot know when a row was edited behind its back, only two kinds
    of moment: proofs that the text was intact (the approval, a verify, which
    refuses a changed text, a restore, a retirement that found no change)
    and sightings of a changed text (the outbox row the index sync or the
    daily scan writes, a retirement that found one; and now, if the row
    differs now). At ``at`` the text was intact only if the last mark at or
    before it is a proof and the next mark after it is a proof too (or there
    is none); between a proof and a sighting the edit may already have
    happened, so it counts as edited: fail closed."""
    pid = record.public_id
    marks: list[tuple[datetime, bool]] = [(record.approved_at, False), *((t, True) for t in seen)]
    for event in mine:
        if event.record_ref != pid:
            continue
        if event.event_type in ("record.verified", "record.restored"):
            marks.append((event.at, False))
        elif event.event_type == "record.retired":
            marks.append((event.at, bool((event.extra or {}).get("edited_outside"))))
    if record.edited_since_approval:
        marks.append((timezone.now(), True))
    marks.sort(key=lambda mark: (mark[0], mark[1]))
    before = [is_edit for moment, is_edit in marks if moment <= at]
    after = [is_edit for moment, is_edit in marks if moment > at]
    return bool(before and before[-1]) or bool(after and after[0])


def _copy(
    record: Record, approved: dict[str, Any], status: str, review_by: date, verified_at: datetime | None
) -> Record:
    """An unsaved copy of ``record`` with its approved text and the given state; it refuses to be saved."""
    past = copy.copy(record)
    for name, value in approved.items():
        setattr(past, name, value)
    past.status, past.review_by, past.verified_at = status, review_by, verified_at

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a record as it stood at a past moment is never saved")

    past.save = refuse  # type: ignore[method-assign]
    return past


def _day(value: object, default: date) -> date:
    parsed = parse_date(value) if isinstance(value, str) else None
    return parsed or default


def _moment(value: object) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) else None


def successor_at(past: Past, moment: Moment, spaces: Iterable[str]) -> Record | None:
    """The version that was current at ``moment`` in place of a superseded
    one, if a reader of ``spaces`` could have received it then."""
    readable, pid, hops = set(spaces), past.successor, 0
    while pid and hops < CHAIN_MAX:
        hops += 1
        row = Record.objects.filter(public_id=pid).first()
        if row is None:
            return None
        then = at_moment([row], moment)[row.pk]
        if then.reason == "superseded":
            pid = then.successor
            continue
        if then.record is None or then.reason is not None or then.space not in readable:
            return None
        return then.record
    return None


def end_of(day: date) -> datetime:
    """The last moment of ``day`` in TIME_ZONE."""
    return timezone.make_aware(datetime.combine(day, time.max))
