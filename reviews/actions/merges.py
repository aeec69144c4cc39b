"""A reviewer folds a create into what already exists: merge it into a
revision of an approved record, or reject it as a duplicate of a record or
of a proposal already under review."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from .. import policy
from .. import validation as v
from ..checksum import checksum_of
from ..errors import InvalidTransition, NotFound, SpaceNotAllowed, ValidationFailed
from ..models import Agent, Proposal, ProposalAction, ProposalState, Record
from ..space_access import space_of
from ._common import (
    Actor,
    apply_changes,
    audit,
    check_not_duplicate,
    locked_proposal,
    locked_record,
    require_live,
    require_pending,
    require_reviewer,
    require_role,
)
from .content import approved_base, skeleton_of
from .decisions import reject_locked

# What the merged revision takes from the create: everything it proposed
# except the space (a revision keeps its record's space).
_MERGED_FIELDS = tuple(name for name in v.CONTENT_FIELDS if name != "space")


def merge_into_revision(proposal: Proposal | str, target: Record | str, *, actor: Actor) -> Proposal:
    """Turn a pending create into a pending revise of the approved record
    ``target``, keeping the agent's text, reason and provenance (the same
    proposal row, so the agent's proposal id stays valid). Nothing is
    approved: the revision waits in the inbox, diffed against ``target``.

    Refused (writing nothing) unless the proposal is a pending create, the
    target is live (not retired or superseded), the proposing agent may use
    the target's space, current and approved (the rule by which an agent may
    revise a record at all), and the agent may receive the target right now
    (the gate's rule: not disputed, overdue or changed outside Vetted), since
    its proposal_status will name the target. The revision takes
    the target's space; the rest is checked as a revision is
    (propose_revision): identical to the target, or identical to another
    live record, is refused. Audited as ``proposal.merged`` with the
    checksums before and after and the spaces."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        proposal = locked_proposal(proposal)
        require_role(reviewer, proposal, "merge", verb="merge")
        require_pending(proposal, "merge")
        if proposal.action != ProposalAction.CREATE:
            raise InvalidTransition(
                f"Cannot merge {proposal.public_id}: only a create can be merged into a revision "
                f"(it is a {proposal.action})."
            )
        record = locked_record(target)
        require_role(reviewer, record, f"merge {proposal.public_id} into", verb="merge")
        require_live(record, f"merge {proposal.public_id} into", reviewer)
        base = approved_base(record, f"merge {proposal.public_id} into")
        if proposal.agent is not None:
            _check_merge_space(proposal.agent, record, str(base["space"]), reviewer)
            if not _agent_may_receive(proposal.agent, record):
                # After a merge the agent's proposal_status names the target:
                # a record withheld from it right now must not be named to it.
                raise InvalidTransition(
                    f"Cannot merge {proposal.public_id} into {record.public_id}: agent {proposal.agent.name!r} "
                    f"may not receive it right now ({record.withhold_reason() or 'withheld'}); decide the record "
                    "first, or reject the proposal instead."
                )
        content, _changed = apply_changes(
            base, {name: getattr(proposal, name) for name in _MERGED_FIELDS}, lock_space=str(base["space"])
        )
        checksum = checksum_of(content)
        if checksum == record.approved_checksum:
            raise ValidationFailed(
                {"target": f"{proposal.public_id} says exactly what {record.public_id} says; reject it as a duplicate"}
            )
        check_not_duplicate(
            checksum, skeleton=skeleton_of(content), ignore_proposal=proposal, ignore_record=record, records_only=True
        )
        before, was_space = proposal.content_checksum, proposal.space
        for name, value in content.items():
            setattr(proposal, name, value)
        proposal.action = ProposalAction.REVISE
        proposal.target = record
        proposal.content_checksum = checksum
        proposal.skeleton_checksum = skeleton_of(content)
        proposal.save()
        audit(
            "proposal.merged",
            actor=reviewer,
            subject=proposal,
            record=record,
            proposal=proposal,
            before=before,
            after=checksum,
            snippet=proposal.title,
            extra={
                "action": ProposalAction.REVISE,
                "was_action": ProposalAction.CREATE,
                "supersedes": record.public_id,
                "from_space": was_space,
                "to_space": proposal.space,
            },
        )
        return proposal


def _check_merge_space(agent: Agent, record: Record, approved_space: str, reviewer: User) -> None:
    """The agent must be one that could have proposed this revision itself:
    a record it may not use must not become its proposal's target (the agent
    would learn of it through proposal_status). The refusal lists only the
    agent's spaces the reviewer may see (its person's other spaces are not theirs)."""
    spaces = {record.space, approved_space}
    if not all(agent.can_use_space(space) for space in spaces):
        shown = [slug for slug in agent.spaces if policy.sees(reviewer, slug)]
        raise SpaceNotAllowed(
            f"Cannot merge into {record.public_id}: it is in space {approved_space!r}, which agent {agent.name!r} "
            f"may not use (of the spaces you see, it has: {', '.join(shown) or 'none'}); reject the proposal "
            "instead.",
            space=approved_space,
            allowed=shown,
        )


# The note when the duplicate is nothing the agent may be told of: a record
# outside its spaces or withheld from it, or another agent's proposal. One
# wording for all of them, so the note does not tell which it was.
UNNAMED_DUPLICATE = "Rejected as a duplicate: this is already known or already under review."


def reject_as_duplicate(proposal: Proposal | str, duplicate_of: str, *, actor: Actor, note: str = "") -> Proposal:
    """Reject a pending create or revise as a duplicate of ``duplicate_of``,
    a live record or another pending proposal (by public id), with a note
    for the agent that names the duplicate only if that agent may be told of
    it: a record it may receive right now (in its spaces and deliverable,
    the gate's rule) or its own pending proposal. Anything else is
    UNNAMED_DUPLICATE. The reviewer's ``note``, if any, follows. Audited as
    ``proposal.rejected`` with ``duplicate_of`` in its extra (reviewers'
    eyes only)."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        proposal = locked_proposal(proposal)
        require_role(reviewer, proposal, "reject", verb="reject_duplicate")
        require_pending(proposal, "reject")
        if proposal.action not in (ProposalAction.CREATE, ProposalAction.REVISE):
            raise InvalidTransition(
                f"Cannot reject {proposal.public_id} as a duplicate: only a create or a revise has text to "
                f"duplicate (it is a {proposal.action}); reject it with a note."
            )
        note = v.clean_note(note)
        duplicate_of = str(duplicate_of or "").strip()[:40]
        said = _duplicate_note(proposal, duplicate_of, reviewer)
        return reject_locked(
            proposal, reviewer, v.clean_note(f"{said} Reviewer's note: {note}" if note else said), duplicate_of
        )


def _duplicate_note(proposal: Proposal, duplicate_of: str, reviewer: User) -> str:
    """The note for the agent, naming the duplicate only where that agent may
    be told of it. The duplicate must be one the reviewer may see (the
    policy's ``reject_duplicate`` rule): a record or proposal in a space they
    do not belong to is answered as an unknown id, before its status,
    successor or title is looked at."""
    agent = proposal.agent
    unknown = NotFound(f"No record or other proposal with id {duplicate_of!r} that you can see.")
    record = Record.objects.filter(public_id=duplicate_of).first()
    if record is not None:
        if not _reviewer_sees(reviewer, record):
            raise unknown
        require_live(record, f"reject {proposal.public_id} as a duplicate of", reviewer)
        if record.pk == (proposal.target_id or 0):
            raise ValidationFailed({"duplicate_of": f"{record.public_id} is the record this proposal revises"})
        if agent is None or _agent_may_receive(agent, record):
            title = (record.approved_version() or {}).get("title", "")
            return (
                f"Rejected as a duplicate of {record.public_id} '{title}', which is already approved: "
                "read it instead of proposing it again."
            )
        return UNNAMED_DUPLICATE
    other = Proposal.objects.filter(public_id=duplicate_of).exclude(pk=proposal.pk).select_related("target").first()
    if other is None or not policy.sees(reviewer, space_of(other)):
        raise unknown
    if other.state != ProposalState.PENDING:
        raise InvalidTransition(
            f"{other.public_id} is no longer under review ({other.state}); "
            "reject with a note instead, or as a duplicate of the record it produced."
        )
    if agent is None or other.agent_id == agent.pk:
        return (
            f"Rejected as a duplicate of your proposal {other.public_id} '{other.title}', which is still under review."
        )
    return UNNAMED_DUPLICATE


def _reviewer_sees(reviewer: User, record: Record) -> bool:
    """The record's space, and for one changed outside Vetted its approved space, are the reviewer's."""
    slugs = {record.space}
    approved = record.approved_text() if record.edited_since_approval else None
    if approved is not None:
        slugs.add(approved["space"])
    return all(policy.sees(reviewer, slug) for slug in slugs)


def _agent_may_receive(agent: Agent, record: Record) -> bool:
    """The gate's rule for one record: in the agent's spaces and deliverable now."""
    candidates = Record.objects.filter(pk=record.pk).deliverable(agent.spaces)
    return any(r.withhold_reason() is None for r in candidates)
