"""A reviewer takes back a decision they just made (``undo_decision``).

A decision is its AuditEvent: the undo reads what to restore from that
event's ``extra`` (the target's previous status, the proposals it closed as
fulfilled, the disputes it rejected, the previous review date), never from a
guess. It restores the exact prior state and writes one ``decision.undone``
event; it rewrites and deletes nothing: a record the decision produced is
retired (reason "undone"), kept in history with its own approval event.

Allowed only to the reviewer who decided, within VETTED_UNDO_SECONDS, once,
and only while nothing was built on the decision: any later AuditEvent on a
row the undo would change (a newer proposal on the produced record, a
dispute, a verify, another decision) makes it refuse and change nothing.
The reviewer must still decide in every space the undo touches
(``require_role``). One reviewer's undo takes back that reviewer's own
decision only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .. import ids
from ..errors import InvalidTransition, NotFound
from ..models import AuditEvent, Proposal, ProposalState, Record, RecordStatus
from ._common import Actor, audit, locked_proposal, locked_record, require_reviewer, require_role

UNDONE_EVENT = "decision.undone"
UNDONE_REASON = "undone"
PROPOSAL_DECISIONS = ("proposal.accepted", "proposal.rejected")
RECORD_DECISIONS = ("record.dispute_cleared", "record.retired", "record.revised", "record.moved", "record.verified")
DECISION_EVENTS = PROPOSAL_DECISIONS + RECORD_DECISIONS


@dataclass
class _Plan:
    """What undoing one decision writes (built from its event, under the locks)."""

    proposal: Proposal | None = None
    produced: Record | None = None  # retired as undone
    restore: dict[str, tuple[Record, str]] = field(default_factory=dict)  # public id -> (record, status)
    reopen: list[str] = field(default_factory=list)  # proposals pending again
    verified: tuple[Record, datetime | None, date] | None = None

    def touched(self) -> tuple[set[str], set[str]]:
        records = set(self.restore) | ({self.produced.public_id} if self.produced else set())
        if self.verified:
            records.add(self.verified[0].public_id)
        proposals = set(self.reopen) | ({self.proposal.public_id} if self.proposal else set())
        return records, proposals


class _Rows:
    """Row readers: locked inside the undo's transaction, plain for a page
    that only asks whether Undo is still allowed."""

    def __init__(self, lock: bool):
        self.record: Callable[[str], Record] = locked_record if lock else _plain_record
        self.proposal: Callable[[str], Proposal] = locked_proposal if lock else _plain_proposal
        self.lock = lock


def _plain_record(public_id: str) -> Record:
    found = Record.objects.filter(public_id=public_id).first()
    if found is None:
        raise NotFound(f"No record with id {public_id!r}.")
    return found


def _plain_proposal(public_id: str) -> Proposal:
    found = Proposal.objects.select_related("target").filter(public_id=public_id).first()
    if found is None:
        raise NotFound(f"No proposal with id {public_id!r}.")
    return found


def decision_event(decision: Proposal | AuditEvent | str | int) -> AuditEvent:
    """The AuditEvent of a decision: given itself, its pk, or a proposal
    (public id or row), whose latest accept or reject it is."""
    if isinstance(decision, AuditEvent):
        return decision
    if isinstance(decision, Proposal) or (isinstance(decision, str) and ids.PROPOSAL_ID_RE.match(decision)):
        public_id = decision.public_id if isinstance(decision, Proposal) else decision
        event = (
            AuditEvent.objects.filter(proposal_ref=public_id, event_type__in=PROPOSAL_DECISIONS).order_by("-id").first()
        )
        if event is None:
            raise NotFound(f"{public_id} has no decision to undo.")
        return event
    if isinstance(decision, int) or (isinstance(decision, str) and decision.isdigit()):
        event = AuditEvent.objects.filter(pk=int(decision), event_type__in=DECISION_EVENTS).first()
        if event is None:
            raise NotFound(f"No decision with number {decision}.")
        return event
    raise NotFound(f"{decision!r} is neither a proposal id ({ids.describe(ids.PROPOSAL)}) nor a decision number.")


def undo_refusal(decision: Proposal | AuditEvent | str | int, *, actor: Actor) -> str | None:
    """Why ``actor`` may not undo this decision now, or None if they may.
    Reads only (for the Recent decisions page); undo_decision re-checks under its locks."""
    try:
        reviewer = require_reviewer(actor)
        _plan(decision_event(decision), reviewer, _Rows(lock=False), timezone.now())
    except (InvalidTransition, NotFound) as exc:
        return exc.message
    return None


def undo_decision(decision: Proposal | AuditEvent | str | int, *, actor: Actor) -> AuditEvent:
    """Undo one decision (a proposal's accept or reject, as proposed, edited or
    in bulk; or a reviewer's keep, retire, revise, move or verify of a
    record): restores the prior state recorded by its event and returns the
    new ``decision.undone`` event. Raises InvalidTransition (nothing
    changed) when it is not this reviewer's, too old, already undone, or
    something was built on it since."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        event = decision_event(decision)
        now = timezone.now()
        plan = _plan(event, reviewer, _Rows(lock=True), now)
        extra: dict[str, Any] = {"undoes": event.pk, "undoes_event": event.event_type}
        if "action" in event.extra:
            extra["action"] = event.extra["action"]
        if plan.proposal is not None:
            p = plan.proposal
            p.state = ProposalState.PENDING
            p.decided_by = None
            p.decided_at = None
            p.decision_note = ""
            p.result_record = None
            p.reviewer_changes = {}
            p.save()
        if plan.reopen:
            Proposal.objects.filter(public_id__in=plan.reopen).update(
                state=ProposalState.PENDING, decided_by=None, decided_at=None, decision_note="", updated_at=now
            )
            extra["reopened_proposals"] = plan.reopen
        if plan.produced is not None:
            made = plan.produced
            made.status = RecordStatus.RETIRED
            # Out of the version chain: the record it replaced is current again,
            # and a later revision of that one must be its only successor (the
            # link stays in the audit events of the decision and of the undo).
            made.supersedes = None
            made.save(update_fields=["status", "supersedes", "updated_at"])
            extra.update(retired=made.public_id, retired_reason=UNDONE_REASON, reads_before_undo=made.access_count)
        for record, status in plan.restore.values():
            record.status = status
            fields = ["status", "updated_at"]
            if record.superseded_by_id is not None and status != RecordStatus.SUPERSEDED:
                record.superseded_by = None
                fields.append("superseded_by")
            record.save(update_fields=fields)
        if plan.restore:
            extra["restored"] = {public_id: status for public_id, (_, status) in plan.restore.items()}
        if plan.verified is not None:
            record, verified_at, review_by = plan.verified
            record.verified_at = verified_at
            record.review_by = review_by
            record.save(update_fields=["verified_at", "review_by", "updated_at"])
            extra["restored_review_by"] = review_by.isoformat()
        subject_record = plan.produced or next((r for r, _ in plan.restore.values()), None)
        if subject_record is None and plan.verified is not None:
            subject_record = plan.verified[0]
        subject: Proposal | Record | None = plan.proposal or _restored_first(plan) or subject_record
        assert subject is not None  # every plan changes a proposal or a record
        return audit(
            UNDONE_EVENT,
            actor=reviewer,
            subject=subject,
            record=subject_record,
            proposal=plan.proposal,
            snippet=_title(plan) or event.snippet,
            extra=extra,
        )


def _restored_first(plan: _Plan) -> Record | None:
    return next((r for r, _ in plan.restore.values()), None)


def _title(plan: _Plan) -> str:
    if plan.proposal is not None:
        p = plan.proposal
        return p.title or (p.target.title if p.target is not None else "")
    record = _restored_first(plan) or plan.produced or (plan.verified[0] if plan.verified else None)
    return record.title if record is not None else ""


def _plan(event: AuditEvent, reviewer: User, rows: _Rows, now: datetime) -> _Plan:
    """Check that ``reviewer`` may undo ``event`` now and say what to write."""
    if event.event_type not in DECISION_EVENTS:
        raise InvalidTransition(f"Event {event.pk} ({event.event_type}) is not a decision that can be undone.")
    if event.actor_type != "user" or event.actor != reviewer.get_username():
        raise InvalidTransition(
            f"Only {event.actor}, who made this decision, can undo it; decide it afresh instead.", by=event.actor
        )
    if AuditEvent.objects.filter(event_type=UNDONE_EVENT, extra__undoes=event.pk).exists():
        raise InvalidTransition("This decision was already undone.")
    window = settings.VETTED_UNDO_SECONDS
    age = now - event.at
    if age > timedelta(seconds=window):
        raise InvalidTransition(
            f"Too late to undo: a decision can be undone for {window} seconds (VETTED_UNDO_SECONDS) and this one "
            f"was made {_ago(age)} ago; decide it afresh instead (revise, retire, or wait for a new proposal)."
        )
    # The role first, on the decision's own row: whoever no longer decides there
    # learns nothing of what became of it since (its status, its successor).
    if event.event_type in PROPOSAL_DECISIONS:
        require_role(reviewer, rows.proposal(event.proposal_ref), "undo the decision on", verb="undo")
    else:
        require_role(reviewer, rows.record(event.subject_id), "undo the decision on", verb="undo")
    plan = _PLANNERS[event.event_type](event, rows)
    _require_roles(reviewer, plan)
    _refuse_if_built_on(event, plan)
    return plan


def _require_roles(reviewer: User, plan: _Plan) -> None:
    """An undo is a decision too: the reviewer must still decide in the space
    of every row it changes (both spaces of a move). Whoever lost the role,
    or left the space, since deciding cannot take the decision back."""
    if plan.proposal is not None:
        require_role(reviewer, plan.proposal, "undo the decision on", verb="undo")
    rows = [record for record, _ in plan.restore.values()]
    rows += [plan.produced] if plan.produced is not None else []
    rows += [plan.verified[0]] if plan.verified is not None else []
    for record in rows:
        require_role(reviewer, record, "undo the decision on", verb="undo")


def _ago(age: timedelta) -> str:
    seconds = int(age.total_seconds())
    return f"{seconds} seconds" if seconds < 120 else f"{seconds // 60} minutes"


def _missing(event: AuditEvent, what: str) -> InvalidTransition:
    return InvalidTransition(f"Event {event.pk} ({event.event_type}) does not record {what}, so it cannot be undone.")


def _reopen(event: AuditEvent, key: str, rows: _Rows, state: str) -> list[str]:
    """The proposals the decision closed (listed under ``key``), which must still be ``state``."""
    closed = list(event.extra.get(key) or [])
    for public_id in closed:
        p = rows.proposal(public_id)
        if p.state != state:
            raise InvalidTransition(f"{public_id}, which this decision closed, is now {p.state}; nothing was undone.")
    return closed


def _restore(plan: _Plan, event: AuditEvent, record: Record, *, now_is: str) -> None:
    """Put ``record`` back to the status the decision recorded, if it still is ``now_is``."""
    previous = event.extra.get("previous_status")
    if previous not in (RecordStatus.APPROVED, RecordStatus.DISPUTED):
        raise _missing(event, f"the status of {record.public_id} before it")
    if record.status != now_is:
        raise InvalidTransition(f"{record.public_id} is {record.status} now, not {now_is}; nothing was undone.")
    plan.restore[record.public_id] = (record, previous)


def _require_produced(record: Record) -> Record:
    if record.status != RecordStatus.APPROVED:
        raise InvalidTransition(
            f"{record.public_id}, which this decision approved, is {record.status} now; nothing was undone."
        )
    return record


def _plan_proposal(event: AuditEvent, rows: _Rows) -> _Plan:
    p = rows.proposal(event.proposal_ref)
    decided = ProposalState.ACCEPTED if event.event_type == "proposal.accepted" else ProposalState.REJECTED
    if p.state != decided:
        raise InvalidTransition(f"{p.public_id} is {p.state} now, not {decided}; nothing was undone.")
    plan = _Plan(proposal=p)
    target = rows.record(p.target.public_id) if p.target is not None else None
    if decided == ProposalState.REJECTED:
        if event.extra.get("dispute_cleared") and target is not None:
            # Rejecting the last dispute made the record approved again.
            if target.status != RecordStatus.APPROVED:
                raise InvalidTransition(f"{target.public_id} is {target.status} now; nothing was undone.")
            plan.restore[target.public_id] = (target, RecordStatus.DISPUTED)
        return plan
    plan.reopen = _reopen(event, "closed_proposals", rows, ProposalState.ACCEPTED)
    made = rows.record(p.result_record.public_id) if p.result_record is not None else None
    if made is not None and made != target:  # a create, revise or correction produced a record
        plan.produced = _require_produced(made)
        if target is not None:
            _restore(plan, event, target, now_is=RecordStatus.SUPERSEDED)
    elif target is not None:  # a retirement, or a dispute upheld
        _restore(plan, event, target, now_is=RecordStatus.RETIRED)
    return plan


def _plan_record(event: AuditEvent, rows: _Rows) -> _Plan:
    plan = _Plan()
    kind = event.event_type
    if kind == "record.dispute_cleared":
        record = rows.record(event.subject_id)
        if record.status != RecordStatus.APPROVED:
            raise InvalidTransition(f"{record.public_id} is {record.status} now; nothing was undone.")
        plan.reopen = _reopen(event, "rejected_disputes", rows, ProposalState.REJECTED)
        plan.restore[record.public_id] = (record, RecordStatus.DISPUTED)
    elif kind == "record.retired":
        _restore(plan, event, rows.record(event.subject_id), now_is=RecordStatus.RETIRED)
        plan.reopen = _reopen(event, "closed_proposals", rows, ProposalState.ACCEPTED)
    elif kind in ("record.revised", "record.moved"):
        old = event.extra.get("supersedes")
        if not old:
            raise _missing(event, "the record it replaced")
        plan.produced = _require_produced(rows.record(event.subject_id))
        _restore(plan, event, rows.record(old), now_is=RecordStatus.SUPERSEDED)
        plan.reopen = _reopen(event, "closed_proposals", rows, ProposalState.ACCEPTED)
    else:  # record.verified
        if "previous_verified_at" not in event.extra or "previous_review_by" not in event.extra:
            raise _missing(event, "the previous review date")
        record = rows.record(event.subject_id)
        was = event.extra["previous_verified_at"]
        plan.verified = (
            record,
            datetime.fromisoformat(was) if was else None,
            date.fromisoformat(event.extra["previous_review_by"]),
        )
    return plan


_PLANNERS: dict[str, Callable[[AuditEvent, _Rows], _Plan]] = {
    **dict.fromkeys(PROPOSAL_DECISIONS, _plan_proposal),
    **dict.fromkeys(RECORD_DECISIONS, _plan_record),
}


def _refuse_if_built_on(event: AuditEvent, plan: _Plan) -> None:
    """Refuse when anything happened since ``event`` to a row the undo would change."""
    records, proposals = plan.touched()
    later = (
        AuditEvent.objects.filter(pk__gt=event.pk)
        .filter(Q(record_ref__in=records) | Q(proposal_ref__in=proposals) | Q(subject_id__in=records | proposals))
        .order_by("id")
        .first()
    )
    if later is None:
        return
    on = later.proposal_ref or later.record_ref or later.subject_id
    what = (
        f"{later.actor} proposed {later.proposal_ref} on {later.record_ref}"
        if later.event_type == "proposal.created" and later.record_ref
        else f"{later.event_type} on {on} by {later.actor}"
    )
    raise InvalidTransition(
        f"Cannot undo: something was built on this decision since ({what}); undoing it would discard that. "
        "Nothing was changed; decide afresh instead.",
        later_event=later.pk,
    )


def undone_events(event_ids: list[int]) -> set[int]:
    """Which of these decision events were undone (for the Recent decisions page)."""
    found = AuditEvent.objects.filter(event_type=UNDONE_EVENT, extra__undoes__in=event_ids)
    return {int(e.extra["undoes"]) for e in found}


__all__ = [
    "DECISION_EVENTS",
    "UNDONE_EVENT",
    "UNDONE_REASON",
    "decision_event",
    "undo_decision",
    "undo_refusal",
    "undone_events",
]
