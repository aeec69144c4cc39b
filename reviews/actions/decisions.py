"""A reviewer decides a pending proposal: accept (as proposed or edited) or reject."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from .. import policy
from .. import validation as v
from ..checksum import checksum_of
from ..errors import InvalidTransition, ValidationFailed
from ..models import Proposal, ProposalAction, ProposalState, Record, RecordStatus
from . import approvals
from ._common import (
    PROPOSAL_KEEPS_SPACE,
    Actor,
    apply_changes,
    audit,
    check_not_duplicate,
    close_extra,
    close_fulfilled,
    locked_proposal,
    locked_record,
    new_record,
    require_live,
    require_pending,
    require_reviewer,
    require_role,
    space_of,
)
from .content import approved_base, content_of, outside_edit_refusal, skeleton_of


def accept_proposal(proposal: Proposal | str, *, actor: Actor, note: str = "") -> Proposal:
    """A reviewer accepts a pending proposal as proposed.

    create  -> a new approved record;
    revise  -> a new approved record that supersedes the target;
    retire  -> the target is retired;
    dispute -> the dispute is upheld: the target is retired (to correct it
               instead, use accept_proposal_with_revision).
    Pending disputes and retirements of a record that is retired or
    superseded are closed as fulfilled in the same transaction.
    A revise (or a dispute's correction) of a record changed outside Vetted
    since approval is refused (ChecksumMismatch): restore_approved_text or
    approve_current_text first. Retiring such a record is allowed (it
    delivers nothing).
    """
    return _accept(proposal, actor=actor, note=note, changes=None)


def accept_proposal_with_revision(
    proposal: Proposal | str, *, actor: Actor, changes: dict[str, Any], note: str = ""
) -> Proposal:
    """A reviewer accepts an edited version. ``changes`` maps content fields to
    the approved values; the proposal keeps the proposed text and records the
    changed fields in ``reviewer_changes``. For a dispute, the changes apply
    to the disputed record's text and produce its corrected successor."""
    if not changes:
        raise ValidationFailed({"changes": "no changes given; use accept_proposal to accept as proposed"})
    return _accept(proposal, actor=actor, note=note, changes=changes)


def _accept(proposal: Proposal | str, *, actor: Actor, note: str, changes: dict[str, Any] | None) -> Proposal:
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        proposal = locked_proposal(proposal)
        verb = "accept"
        if changes:
            verb = "correct" if proposal.action == ProposalAction.DISPUTE else "accept_edited"
        counted = require_role(reviewer, proposal, "accept", verb=verb)
        require_pending(proposal, "accept")
        note = v.clean_note(note)
        if counted == policy.Outcome.COUNTED and approvals.first_of_two(proposal, reviewer, note):
            return proposal
        earlier = [a.user.get_username() for a in approvals.approvals_of(proposal)]
        target = locked_record(proposal.target) if proposal.target is not None else None
        makes_text = proposal.action in (ProposalAction.CREATE, ProposalAction.REVISE) or (
            proposal.action == ProposalAction.DISPUTE and bool(changes)
        )
        if target is not None:
            require_live(target, f"accept {proposal.public_id} on", reviewer)
            # Re-checked under the lock: text changed outside Vetted after the
            # card was shown must not become the base of a new approved record.
            if makes_text and target.edited_since_approval:
                raise outside_edit_refusal(target, f"accept {proposal.public_id} on")
        extra: dict[str, Any] = {"action": proposal.action}
        if earlier:
            extra["approved_by"] = [*earlier, reviewer.get_username()]
        if target is not None:
            # What undo_decision restores the target to (approved or disputed).
            extra["previous_status"] = target.status
        before = target.approved_checksum if target else ""
        after = ""
        result = target

        if makes_text:
            if proposal.action == ProposalAction.DISPUTE:
                base = approved_base(_named(target, proposal), f"correct {proposal.public_id} on")
            else:
                base = content_of(proposal)
            # The proposal's space is locked: the policy asked about this space only.
            lock_space = space_of(proposal)
            if changes:
                refusal = PROPOSAL_KEEPS_SPACE.format(space=lock_space) if target is None else ""
                content, changed = apply_changes(base, changes, lock_space=lock_space, space_refusal=refusal)
            else:
                content, changed = v.clean_content(base), {}
            if changes and proposal.action != ProposalAction.DISPUTE and not changed:
                raise ValidationFailed(
                    {"changes": "the edited version is identical to the proposal; accept it as proposed"}
                )
            checksum = checksum_of(content)
            if target is not None and checksum == target.approved_checksum:
                raise ValidationFailed({"changes": f"the result is identical to {target.public_id}"})
            check_not_duplicate(
                checksum,
                skeleton=skeleton_of(content),
                ignore_proposal=proposal,
                ignore_record=target,
                records_only=True,
            )
            result = new_record(
                content, reviewer=reviewer, proposal=proposal, supersedes=target, reason=proposal.reason
            )
            after = checksum
            proposal.reviewer_changes = changed
            if target is not None:
                extra["supersedes"] = target.public_id
                extra["closed_proposals"] = close_fulfilled(
                    target,
                    actor=reviewer,
                    accepting=proposal,
                    note=f"Resolved: {target.public_id} was superseded by {result.public_id}.",
                )
            if changed:
                extra["reviewer_changed"] = sorted(changed)
        elif proposal.action in (ProposalAction.RETIRE, ProposalAction.DISPUTE):
            target = _named(target, proposal)
            if changes:
                raise ValidationFailed({"changes": "a retirement has no text to edit; accept or reject it"})
            if target.edited_since_approval:
                extra["edited_outside"] = True
            target.status = RecordStatus.RETIRED
            target.save(update_fields=["status", "updated_at"])
            extra["closed_proposals"] = close_fulfilled(
                target,
                actor=reviewer,
                accepting=proposal,
                # Not the accepted proposal's id: it may be another agent's.
                note=f"Resolved: {target.public_id} was retired.",
            )
            extra["retired"] = target.public_id

        proposal.state = ProposalState.ACCEPTED
        proposal.decided_by = reviewer
        proposal.decided_at = timezone.now()
        proposal.decision_note = note
        proposal.result_record = result
        proposal.save()
        audit(
            "proposal.accepted",
            actor=reviewer,
            subject=proposal,
            record=result,
            proposal=proposal,
            before=before,
            after=after,
            snippet=note or proposal.title or (target.title if target else ""),
            extra=extra,
        )
        return proposal


def _named(target: Record | None, proposal: Proposal) -> Record:
    """The record a revise, retire or dispute names (always set for those)."""
    if target is None:
        raise InvalidTransition(f"{proposal.public_id} names no record.")
    return target


def reject_proposal(proposal: Proposal | str, *, actor: Actor, note: str = "") -> Proposal:
    """A reviewer rejects a pending proposal; the note is shown to the agent.
    Rejecting the last pending dispute of a record clears the dispute."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        proposal = locked_proposal(proposal)
        require_role(reviewer, proposal, "reject", verb="reject")
        require_pending(proposal, "reject")
        return reject_locked(proposal, reviewer, v.clean_note(note))


def reject_locked(proposal: Proposal, reviewer: User, note: str, duplicate_of: str = "") -> Proposal:
    """Reject the locked, pending ``proposal`` (the caller holds the
    transaction and has checked the reviewer and the note)."""
    proposal.state = ProposalState.REJECTED
    proposal.decided_by = reviewer
    proposal.decided_at = timezone.now()
    proposal.decision_note = note
    proposal.save()
    extra = close_extra(proposal)
    if duplicate_of:
        extra["duplicate_of"] = duplicate_of
    audit(
        "proposal.rejected",
        actor=reviewer,
        subject=proposal,
        record=proposal.target,
        proposal=proposal,
        snippet=note or proposal.title,
        extra=extra,
    )
    return proposal
