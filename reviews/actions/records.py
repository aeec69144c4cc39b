"""A reviewer acts on a record directly: retire, revise, move, clear a dispute,
verify, and settle one changed outside Vetted (restore its approved text, or
approve its current text)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from .. import validation as v
from ..checksum import CHECKSUM_FIELDS, checksum_of
from ..errors import ChecksumMismatch, InvalidTransition, ValidationFailed
from ..models import Proposal, ProposalAction, ProposalState, Record, RecordStatus
from ._common import (
    Actor,
    apply_changes,
    audit,
    check_not_duplicate,
    close_fulfilled,
    locked_record,
    new_record,
    require_live,
    require_reviewer,
    require_role,
)
from .content import approved_base, content_of, skeleton_of


def retire_record(record: Record | str, *, actor: Actor, note: str) -> Record:
    """A reviewer retires a record directly (it stays readable, never delivered).
    Pending disputes and retirements of it are closed as fulfilled."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        note = v.clean_note(note, required=True)
        record = locked_record(record)
        require_role(reviewer, record, "retire", verb="retire")
        require_live(record, "retire", reviewer)
        was = record.status
        record.status = RecordStatus.RETIRED
        record.save(update_fields=["status", "updated_at"])
        closed = close_fulfilled(record, actor=reviewer, note=f"Resolved: retired by {reviewer.get_username()}.")
        extra: dict[str, Any] = {"previous_status": was, "closed_proposals": closed}
        if record.edited_since_approval:
            extra["edited_outside"] = True
        audit(
            "record.retired",
            actor=reviewer,
            subject=record,
            record=record,
            before=record.approved_checksum,
            snippet=note,
            extra=extra,
        )
        return record


def revise_record(record: Record | str, *, actor: Actor, changes: dict[str, Any], note: str = "") -> Record:
    """A reviewer writes a corrected version of a record directly: a new
    approved record that supersedes it (the space stays the same). Fields not
    in ``changes`` keep their approved values: for a record changed outside
    Vetted, the approved text (refused with ChecksumMismatch if no approved
    copy is kept; approve_current_text or retire it then)."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        note = v.clean_note(note)
        record = locked_record(record)
        require_role(reviewer, record, "revise", verb="revise")
        require_live(record, "revise", reviewer)
        return _supersede(
            record,
            reviewer=reviewer,
            base=approved_base(record, "revise"),
            changes=changes,
            note=note,
            identical=f"the revision is identical to {record.public_id}",
        )


def _supersede(
    record: Record,
    *,
    reviewer: User,
    base: dict[str, Any],
    changes: dict[str, Any],
    note: str,
    identical: str,
    extra: dict[str, Any] | None = None,
) -> Record:
    """The reviewer's revise path (inside the caller's transaction, ``record``
    locked): ``base`` with ``changes`` becomes a new approved record that
    supersedes ``record`` in ``base``'s (the approved) space; one record.revised event."""
    was = record.status  # what undo_decision restores it to
    content, changed = apply_changes(base, changes, lock_space=base["space"])
    checksum = checksum_of(content)
    if checksum == record.approved_checksum:
        raise ValidationFailed({"changes": identical})
    check_not_duplicate(checksum, skeleton=skeleton_of(content), ignore_record=record)
    return _replace_by_reviewer(
        record,
        content,
        checksum,
        reviewer=reviewer,
        event="record.revised",
        reason=note or f"Revised by {reviewer.get_username()}",
        resolved="was superseded by {new}",
        snippet=note,
        extra={"previous_status": was, "changed": sorted(changed), **(extra or {})},
    )


def _replace_by_reviewer(
    record: Record,
    content: dict[str, Any],
    checksum: str,
    *,
    reviewer: User,
    event: str,
    reason: str,
    resolved: str,
    snippet: str,
    extra: dict[str, Any],
) -> Record:
    """A reviewer's new approved version of ``record`` (revised or moved;
    inside the caller's transaction, ``record`` locked): stored, the
    proposals it fulfils closed ("Resolved: REC {resolved}", where ``{new}``
    is the new record's id), and one ``event`` audited."""
    new = new_record(content, reviewer=reviewer, proposal=None, supersedes=record, reason=reason)
    closed = close_fulfilled(
        record, actor=reviewer, note=f"Resolved: {record.public_id} {resolved.format(new=new.public_id)}."
    )
    audit(
        event,
        actor=reviewer,
        subject=new,
        record=new,
        before=record.approved_checksum,
        after=checksum,
        snippet=snippet or new.title,
        extra={"supersedes": record.public_id, **extra, "closed_proposals": closed},
    )
    return new


def move_record(record: Record | str, *, actor: Actor, space: str, note: str) -> Record:
    """A reviewer moves a record to another space: the only way
    content crosses between personal, team and system. The moved version is a
    new approved record in ``space`` that supersedes the old one, so history
    stays and an agent that could read only the old space never learns where
    it went. Refused for a record edited since approval (its text was never
    reviewed) and for a disputed one (decide the dispute first)."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        note = v.clean_note(note, required=True)
        record = locked_record(record)
        # Content crosses spaces only here: the mover decides in both, and the
        # roles come first, so a person outside either space learns neither
        # the record's status nor its successor nor whether the space exists.
        new_space = str(space or "").strip().lower()
        if not new_space:
            raise ValidationFailed({"space": "the space to move the record to (its slug)"})
        require_role(reviewer, record, "move", verb="move", also=new_space)
        new_space = v.clean_space(new_space)
        require_live(record, "move", reviewer)
        if record.status == RecordStatus.DISPUTED:
            raise InvalidTransition(
                f"{record.public_id} is disputed; decide the dispute first (keep, correct or retire the record)."
            )
        if record.edited_since_approval:
            raise ChecksumMismatch(
                f"{record.public_id} was edited since approval; restore the approved text or "
                "approve the current text first instead of moving text nobody reviewed."
            )
        if new_space == record.space:
            raise ValidationFailed({"space": f"{record.public_id} is already in {new_space}"})
        content = content_of(record)
        content["space"] = new_space
        checksum = checksum_of(content)
        check_not_duplicate(checksum, skeleton=skeleton_of(content))
        return _replace_by_reviewer(
            record,
            content,
            checksum,
            reviewer=reviewer,
            event="record.moved",
            reason=note,
            # The closed proposals stay in the old space, whose readers (people and
            # agents, through proposal_status) may not know the new one: the note
            # names neither it nor the new id; the record.moved event keeps both.
            resolved="was moved to another space",
            snippet=note,
            extra={
                "previous_status": RecordStatus.APPROVED,  # a disputed record cannot be moved
                "from_space": record.space,
                "to_space": new_space,
            },
        )


def clear_dispute(record: Record | str, *, actor: Actor, note: str = "") -> Record:
    """A reviewer decides a disputed record is right after all: every pending
    dispute of it is rejected (with the note) and it is approved again."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        note = v.clean_note(note)
        record = locked_record(record)
        require_role(reviewer, record, "clear the dispute of", verb="keep")
        if record.status != RecordStatus.DISPUTED:
            raise InvalidTransition(f"{record.public_id} is {record.status}, not disputed; nothing to clear.")
        now = timezone.now()
        disputes = list(
            Proposal.objects.select_for_update()
            .filter(
                target=record,
                action=ProposalAction.DISPUTE,
                state=ProposalState.PENDING,
            )
            .values_list("public_id", flat=True)
        )
        Proposal.objects.filter(public_id__in=disputes).update(
            state=ProposalState.REJECTED,
            decided_by=reviewer,
            decided_at=now,
            decision_note=note or "Dispute cleared: the record stands.",
            updated_at=now,
        )
        record.status = RecordStatus.APPROVED
        record.save(update_fields=["status", "updated_at"])
        audit(
            "record.dispute_cleared",
            actor=reviewer,
            subject=record,
            record=record,
            before=record.approved_checksum,
            after=record.approved_checksum,
            snippet=note,
            extra={"rejected_disputes": disputes},
        )
        return record


def verify_record(record: Record | str, *, actor: Actor, review_by: date | str | None = None) -> Record:
    """A reviewer confirms a record still holds: stamps verified_at and sets a
    new review date (default: today + the kind's review period). Refused if the
    text changed since approval (revise or retire it instead) or if disputed."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        record = locked_record(record)
        require_role(reviewer, record, "verify", verb="verify")
        require_live(record, "verify", reviewer)
        if record.status == RecordStatus.DISPUTED:
            raise InvalidTransition(
                f"{record.public_id} is disputed; decide the dispute first (keep, correct or retire the record)."
            )
        current = record.current_checksum()
        if record.edited_since_approval:
            raise ChecksumMismatch(
                f"{record.public_id} was edited since approval (approved {record.approved_checksum[:12]}…, "
                f"now {current[:12]}…); verifying would approve text nobody reviewed. Restore the approved text, "
                "approve the current text, or retire it.",
                approved=record.approved_checksum,
                current=current,
            )
        new_review_by = v.clean_review_by(review_by, record.kind) if review_by else v.default_review_by(record.kind)
        old_review_by = record.review_by
        old_verified_at = record.verified_at
        record.verified_at = timezone.now()
        record.review_by = new_review_by
        record.save(update_fields=["verified_at", "review_by", "updated_at"])
        audit(
            "record.verified",
            actor=reviewer,
            subject=record,
            record=record,
            before=current,
            after=current,
            snippet=record.title,
            extra={
                "review_by": str(new_review_by),
                "previous_review_by": str(old_review_by),
                # What undo_decision restores (None: never verified).
                "previous_verified_at": old_verified_at.isoformat() if old_verified_at else None,
            },
        )
        return record


# ------------------------------------------------------------------ records changed outside Vetted


def restore_approved_text(record: Record | str, *, actor: Actor, note: str = "") -> Record:
    """A reviewer puts back what was approved in a record changed outside
    Vetted: its kind, space, title, body and tags become its approved_content
    again, so its text matches approved_checksum (in any status: a retired or
    superseded record's history becomes honest again). One record.restored
    event with the checksums before and after. Refused if the text already
    matches, or if no approved copy is kept (approve_current_text or retire)."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        note = v.clean_note(note)
        record = locked_record(record)
        require_role(reviewer, record, "restore", verb="restore")
        if not record.edited_since_approval:
            raise InvalidTransition(f"{record.public_id}'s text matches its approval; there is nothing to restore.")
        approved = record.approved_text()
        if approved is None:
            raise InvalidTransition(
                f"{record.public_id} has no approved copy of its text (it was edited before Vetted kept one), so it "
                f"cannot be restored; approve its current text (`review approve-current {record.public_id} "
                "--note ...`) or retire it."
            )
        before = record.current_checksum()
        restored = [name for name in CHECKSUM_FIELDS if getattr(record, name) != approved[name]]
        for name in CHECKSUM_FIELDS:
            setattr(record, name, approved[name])
        record.save(update_fields=[*CHECKSUM_FIELDS, "updated_at"])
        audit(
            "record.restored",
            actor=reviewer,
            subject=record,
            record=record,
            before=before,
            after=record.current_checksum(),
            snippet=note or record.title,
            extra={"restored_fields": restored, "status": record.status},
        )
        return record


def approve_current_text(record: Record | str, *, actor: Actor, note: str) -> Record:
    """A reviewer approves the text a record holds now, although it was changed
    outside Vetted, through the revise path: a new approved record with the
    current content supersedes it (one record.revised event, marked
    ``approved_current_text``, ``changed`` naming the fields edited outside).
    ``note`` is required. Refused if the text matches its approval (verify it
    instead), if its space was changed outside Vetted (restore it, then move
    it), or if the current text breaks the write rules (revise or retire it)."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        note = v.clean_note(note, required=True)
        record = locked_record(record)
        require_role(reviewer, record, "approve the current text of", verb="approve_current")
        require_live(record, "approve the current text of", reviewer)
        if not record.edited_since_approval:
            raise InvalidTransition(
                f"{record.public_id}'s text matches its approval; there is nothing to approve (verify it instead)."
            )
        approved = record.approved_text()
        if approved is not None and approved["space"] != record.space:
            raise InvalidTransition(
                f"{record.public_id}'s space was changed outside Vetted ({approved['space']} to {record.space}); "
                "restore the approved text, then move it if it belongs there."
            )
        base = content_of(record)
        base["review_by"] = None
        base.update(approved or {})
        edited = record.current_checksum()
        return _supersede(
            record,
            reviewer=reviewer,
            base=base,
            changes=record.checksummed_content(),
            note=note,
            identical=(
                f"under the write rules the current text of {record.public_id} is its approved text; restore it instead"
            ),
            extra={
                "approved_current_text": True,
                "edited_checksum": edited,
                "approved_copy_kept": approved is not None,
            },
        )
