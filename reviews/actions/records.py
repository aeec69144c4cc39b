"""A reviewer acts on a record directly: retire, revise, move, clear a dispute, verify."""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.utils import timezone

from .. import validation as v
from ..errors import ChecksumMismatch, InvalidTransition, ValidationFailed
from ..models import Proposal, ProposalAction, ProposalState, Record, RecordStatus
from ._common import (
    _apply_changes,
    _audit,
    _check_not_duplicate,
    _checksum_of,
    _close_fulfilled,
    _content_of,
    _locked_record,
    _new_record,
    _require_live,
    _require_reviewer,
    _skeleton_of,
)



def retire_record(record: Record | str, *, actor, note: str) -> Record:
    """A reviewer retires a record directly (it stays readable, never delivered).
    Pending disputes and retirements of it are closed as fulfilled."""
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        note = v.clean_note(note, required=True)
        record = _locked_record(record)
        _require_live(record, "retire")
        was = record.status
        record.status = RecordStatus.RETIRED
        record.save(update_fields=["status", "updated_at"])
        closed = _close_fulfilled(record, actor=reviewer, note=f"Resolved: retired by {reviewer.get_username()}.")
        _audit("record.retired", actor=reviewer, subject=record, record=record, before=record.approved_checksum,
               snippet=note, extra={"previous_status": was, "closed_proposals": closed})
        return record


def revise_record(record: Record | str, *, actor, changes: dict, note: str = "") -> Record:
    """A reviewer writes a corrected version of a record directly: a new
    approved record that supersedes it (the scope stays the same)."""
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        note = v.clean_note(note)
        record = _locked_record(record)
        _require_live(record, "revise")
        base = _content_of(record)
        base["review_by"] = None
        content, changed = _apply_changes(base, changes, lock_scope=record.scope)
        checksum = _checksum_of(content)
        if checksum == record.approved_checksum:
            raise ValidationFailed({"changes": f"the revision is identical to {record.public_id}"})
        _check_not_duplicate(checksum, skeleton=_skeleton_of(content), ignore_record=record)
        new = _new_record(content, reviewer=reviewer, proposal=None, supersedes=record,
                          reason=note or f"Revised by {reviewer.get_username()}")
        closed = _close_fulfilled(record, actor=reviewer, note=f"Resolved: {record.public_id} was superseded by {new.public_id}.")
        _audit("record.revised", actor=reviewer, subject=new, record=new, before=record.approved_checksum,
               after=checksum, snippet=note or new.title,
               extra={"supersedes": record.public_id, "changed": sorted(changed), "closed_proposals": closed})
        return new


def move_record(record: Record | str, *, actor, scope: str, note: str) -> Record:
    """A reviewer moves a record to another space (scope): the only way
    content crosses between personal, team and system. The moved version is a
    new approved record in ``scope`` that supersedes the old one, so history
    stays and an agent that could read only the old space never learns where
    it went. Refused for a record edited since approval (its text was never
    reviewed) and for a disputed one (decide the dispute first)."""
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        note = v.clean_note(note, required=True)
        record = _locked_record(record)
        _require_live(record, "move")
        if record.status == RecordStatus.DISPUTED:
            raise InvalidTransition(f"{record.public_id} is disputed; clear the dispute, revise or retire it first.")
        if record.current_checksum() != record.approved_checksum:
            raise ChecksumMismatch(f"{record.public_id} was edited since approval; revise or retire it instead of "
                                   "moving text nobody reviewed.")
        new_scope = v.clean_scope(scope)
        if new_scope == record.scope:
            raise ValidationFailed({"scope": f"{record.public_id} is already in {new_scope}"})
        content = _content_of(record)
        content["scope"] = new_scope
        checksum = _checksum_of(content)
        _check_not_duplicate(checksum, skeleton=_skeleton_of(content))
        new = _new_record(content, reviewer=reviewer, proposal=None, supersedes=record, reason=note)
        closed = _close_fulfilled(record, actor=reviewer, note=f"Resolved: {record.public_id} moved to {new_scope} "
                                                               f"as {new.public_id}.")
        _audit("record.moved", actor=reviewer, subject=new, record=new, before=record.approved_checksum,
               after=checksum, snippet=note,
               extra={"supersedes": record.public_id, "from_scope": record.scope, "to_scope": new_scope,
                      "closed_proposals": closed})
        return new


def clear_dispute(record: Record | str, *, actor, note: str = "") -> Record:
    """A reviewer decides a disputed record is right after all: every pending
    dispute of it is rejected (with the note) and it is approved again."""
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        note = v.clean_note(note)
        record = _locked_record(record)
        if record.status != RecordStatus.DISPUTED:
            raise InvalidTransition(f"{record.public_id} is {record.status}, not disputed; nothing to clear.")
        now = timezone.now()
        disputes = list(Proposal.objects.select_for_update().filter(
            target=record, action=ProposalAction.DISPUTE, state=ProposalState.PENDING,
        ).values_list("public_id", flat=True))
        Proposal.objects.filter(public_id__in=disputes).update(
            state=ProposalState.REJECTED, decided_by=reviewer, decided_at=now,
            decision_note=note or "Dispute cleared: the record stands.", updated_at=now,
        )
        record.status = RecordStatus.APPROVED
        record.save(update_fields=["status", "updated_at"])
        _audit("record.dispute_cleared", actor=reviewer, subject=record, record=record,
               before=record.approved_checksum, after=record.approved_checksum, snippet=note,
               extra={"rejected_disputes": disputes})
        return record


def verify_record(record: Record | str, *, actor, review_by: date | str | None = None) -> Record:
    """A reviewer confirms a record still holds: stamps verified_at and sets a
    new review date (default: today + the kind's review period). Refused if the
    text changed since approval (revise or retire it instead) or if disputed."""
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        record = _locked_record(record)
        _require_live(record, "verify")
        if record.status == RecordStatus.DISPUTED:
            raise InvalidTransition(f"{record.public_id} is disputed; clear the dispute, revise or retire it first.")
        current = record.current_checksum()
        if current != record.approved_checksum:
            raise ChecksumMismatch(
                f"{record.public_id} was edited since approval (approved {record.approved_checksum[:12]}…, "
                f"now {current[:12]}…); verifying would approve text nobody reviewed. Revise or retire it.",
                approved=record.approved_checksum, current=current,
            )
        new_review_by = v.clean_review_by(review_by, record.kind) if review_by else v.default_review_by(record.kind)
        old_review_by = record.review_by
        record.verified_at = timezone.now()
        record.review_by = new_review_by
        record.save(update_fields=["verified_at", "review_by", "updated_at"])
        _audit("record.verified", actor=reviewer, subject=record, record=record, before=current, after=current,
               snippet=record.title, extra={"review_by": str(new_review_by), "previous_review_by": str(old_review_by)})
        return record
