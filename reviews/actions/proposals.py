"""Agents propose: create, revise, retire, dispute, and withdraw their own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .. import validation as v
from ..checksum import checksum_of
from ..errors import AlreadyRejected, DuplicateContent, InvalidTransition, LimitReached, ValidationFailed
from ..models import Agent, Proposal, ProposalAction, ProposalState, Record, RecordStatus
from ._common import (
    apply_changes,
    audit,
    check_agent_space,
    check_not_duplicate,
    close_extra,
    locked_agent,
    locked_proposal,
    provenance_of,
    require_active_agent,
    require_live,
    require_pending,
    visible_target,
)
from ._notify import tell_proposal
from .content import approved_base, skeleton_of


def propose_create(
    *,
    agent: Agent,
    reason: str,
    source_tool: str = "",
    session: str = "",
    full_duplicate_check: bool = False,
    resubmit: bool = False,
    resubmit_reason: str = "",
    **fields: Any,
) -> Proposal:
    """An agent asks for a new record. Returns the pending proposal.

    ``fields``: kind, space, title, body, tags, review_by, valid_from,
    valid_until, confidence, metadata. Refuses exact duplicates of a record the
    agent can receive or of its own pending proposal (DuplicateContent with
    the existing id); see check_not_duplicate. ``full_duplicate_check``:
    of any live record or pending proposal, for imports, whose answer goes to
    the person running them rather than to an agent. Content this agent
    already had rejected is refused (AlreadyRejected, with the earlier
    decision) unless ``resubmit`` with a ``resubmit_reason``; see
    _resubmission.
    """
    with transaction.atomic():
        agent = require_active_agent(locked_agent(agent))
        content = v.clean_content(fields)
        reason = v.clean_reason(reason)
        check_agent_space(agent, content["space"])
        checksum, skeleton = checksum_of(content), skeleton_of(content)
        check_not_duplicate(checksum, skeleton=skeleton, proposer=None if full_duplicate_check else agent)
        earlier, resubmit_reason = _resubmission(
            agent, ProposalAction.CREATE, checksum, None, resubmit, resubmit_reason
        )
        return _store_content_proposal(
            ProposalAction.CREATE,
            agent=agent,
            reason=reason,
            content={**content, "resubmits": earlier, "resubmit_reason": resubmit_reason},
            checksums=(checksum, skeleton),
            provenance=provenance_of(agent, source_tool, session),
            extra={"space": content["space"], **_resubmits(earlier)},
        )


def _store_content_proposal(
    action: str,
    *,
    agent: Agent,
    reason: str,
    content: dict[str, Any],
    checksums: tuple[str, str],
    provenance: dict[str, Any],
    extra: dict[str, Any],
    target: Record | None = None,
) -> Proposal:
    """A create or revise proposal, cleaned and checked by the caller (inside
    its transaction): stored, one proposal.created event, the inbox told."""
    checksum, skeleton = checksums
    proposal = Proposal.objects.create(
        action=action,
        target=target,
        agent=agent,
        reason=reason,
        content_checksum=checksum,
        skeleton_checksum=skeleton,
        **content,
        **provenance,
    )
    audit(
        "proposal.created",
        actor=agent,
        subject=proposal,
        record=target,
        proposal=proposal,
        before=target.approved_checksum if target else "",
        after=checksum,
        snippet=proposal.title,
        extra={"action": proposal.action, **extra},
    )
    tell_proposal(proposal)
    return proposal


def propose_revision(
    target: Record | str,
    *,
    agent: Agent,
    reason: str,
    source_tool: str = "",
    session: str = "",
    full_duplicate_check: bool = False,
    resubmit: bool = False,
    resubmit_reason: str = "",
    **changes: Any,
) -> Proposal:
    """An agent asks to replace ``target`` with changed content.

    Fields not given keep the target's approved values (review_by gets a
    fresh default); for a target changed outside Vetted that is its approved
    text, not the changed one (refused if no approved copy is kept). The space
    cannot change. A revision that changes nothing is refused, and so is one
    this agent already had rejected, unless resubmitted (see _resubmission).
    """
    with transaction.atomic():
        agent = require_active_agent(locked_agent(agent))
        record = visible_target(agent, target)
        require_live(record, "revise", agent)
        reason = v.clean_reason(reason)
        base = approved_base(record, "revise")
        content, changed = apply_changes(base, changes, lock_space=base["space"])
        checksum = checksum_of(content)
        if checksum == record.approved_checksum:
            raise ValidationFailed(
                {"body": f"the revision is identical to {record.public_id}; change the title, body, kind or tags"}
            )
        skeleton = skeleton_of(content)
        check_not_duplicate(
            checksum, skeleton=skeleton, ignore_record=record, proposer=None if full_duplicate_check else agent
        )
        earlier, resubmit_reason = _resubmission(
            agent, ProposalAction.REVISE, checksum, record, resubmit, resubmit_reason
        )
        return _store_content_proposal(
            ProposalAction.REVISE,
            agent=agent,
            reason=reason,
            content={**content, "resubmits": earlier, "resubmit_reason": resubmit_reason},
            checksums=(checksum, skeleton),
            provenance=provenance_of(agent, source_tool, session),
            extra={"changed": sorted(changed), **_resubmits(earlier)},
            target=record,
        )


def _resubmission(
    agent: Agent, action: str, checksum: str, target: Record | None, resubmit: bool, resubmit_reason: str
) -> tuple[Proposal | None, str]:
    """Resubmission: this agent's latest rejected proposal of the
    same action, target and content (checksum), if any.

    Without ``resubmit`` such a proposal is refused with AlreadyRejected
    (the earlier decision and its note, so the agent learns why, and the
    reviewer is not asked the same question twice as if it were new). With
    ``resubmit`` a ``resubmit_reason`` is required and the new proposal is
    linked to the earlier one, which the inbox shows beside it. Returns the
    earlier proposal (or None) and the cleaned resubmit reason. Only the
    agent's own proposals count: another agent's rejection is never named to
    it (its proposal is stored like any other). ``resubmit`` with nothing
    rejected to resubmit is refused, so the flag cannot be sent by habit.
    """
    earlier = (
        Proposal.objects.filter(
            agent=agent, action=action, target=target, content_checksum=checksum, state=ProposalState.REJECTED
        )
        .order_by("-decided_at", "-id")
        .first()
    )
    if earlier is None:
        if resubmit:
            raise ValidationFailed({"resubmit": "none of your rejected proposals has this content; leave resubmit out"})
        return None, ""
    if not resubmit:
        note = f" The reviewer's note: {earlier.decision_note}" if earlier.decision_note else " (no note)"
        decided = f" on {earlier.decided_at:%Y-%m-%d}" if earlier.decided_at else ""
        raise AlreadyRejected(
            f"Not stored: your proposal {earlier.public_id} with this same content was rejected{decided}.{note} "
            "Change it to address the note, or, if you have new grounds, send it again with resubmit=true and "
            "resubmit_reason saying what changed.",
            earlier=earlier,
        )
    if not (resubmit_reason or "").strip():
        raise ValidationFailed(
            {
                "resubmit_reason": "required with resubmit: why the reviewer should look again at what "
                f"they rejected in {earlier.public_id}"
            }
        )
    return earlier, v.clean_reason(resubmit_reason, field="resubmit_reason")


def _resubmits(earlier: Proposal | None) -> dict[str, str]:
    return {"resubmits": earlier.public_id} if earlier is not None else {}


def propose_retirement(
    target: Record | str, *, agent: Agent, reason: str, source_tool: str = "", session: str = ""
) -> Proposal:
    """An agent asks for ``target`` to be retired (it no longer holds)."""
    with transaction.atomic():
        agent = require_active_agent(locked_agent(agent))
        record = visible_target(agent, target)
        require_live(record, "retire", agent)
        reason = v.clean_reason(reason)
        # Only the agent's own pending retirement: another agent's is not this
        # agent's to know of (the reviewer sees both; accepting one closes the other).
        pending = Proposal.objects.filter(
            target=record, action=ProposalAction.RETIRE, state=ProposalState.PENDING, agent=agent
        ).first()
        if pending:
            raise DuplicateContent(
                f"A retirement of {record.public_id} is already waiting for review: {pending.public_id}.",
                existing_id=pending.public_id,
            )
        proposal = Proposal.objects.create(
            action=ProposalAction.RETIRE,
            target=record,
            agent=agent,
            reason=reason,
            **provenance_of(agent, source_tool, session),
        )
        audit(
            "proposal.created",
            actor=agent,
            subject=proposal,
            record=record,
            proposal=proposal,
            before=record.approved_checksum,
            snippet=record.title,
            extra={"action": proposal.action},
        )
        tell_proposal(proposal)
        return proposal


def dispute_record(
    target: Record | str, *, agent: Agent, reason: str, source_tool: str = "", session: str = ""
) -> Proposal:
    """An agent says ``target`` is wrong. The record is disputed at once (so it
    is withheld from search) and the dispute waits in the inbox."""
    with transaction.atomic():
        agent = require_active_agent(locked_agent(agent))
        record = visible_target(agent, target)
        require_live(record, "dispute", agent)
        reason = v.clean_reason(reason)
        pending = Proposal.objects.filter(
            target=record, action=ProposalAction.DISPUTE, state=ProposalState.PENDING, agent=agent
        ).first()
        if pending:
            raise DuplicateContent(
                f"Agent {agent.name!r} already disputes {record.public_id}: {pending.public_id}.",
                existing_id=pending.public_id,
            )
        _require_dispute_room(agent)
        proposal = Proposal.objects.create(
            action=ProposalAction.DISPUTE,
            target=record,
            agent=agent,
            reason=reason,
            **provenance_of(agent, source_tool, session),
        )
        was = record.status
        record.status = RecordStatus.DISPUTED
        record.save(update_fields=["status", "updated_at"])
        audit(
            "record.disputed",
            actor=agent,
            subject=record,
            record=record,
            proposal=proposal,
            before=record.approved_checksum,
            snippet=reason,
            extra={"previous_status": was},
        )
        tell_proposal(proposal)
        return proposal


def _require_dispute_room(agent: Agent) -> None:
    """Each dispute withholds a record from everyone, so one agent may hold
    only VETTED_OPEN_DISPUTES_PER_AGENT at once (the agent row is locked by
    the caller, so two disputes cannot both take the last place)."""
    cap = settings.VETTED_OPEN_DISPUTES_PER_AGENT
    if not cap:
        return
    disputes = Proposal.objects.filter(agent=agent, action=ProposalAction.DISPUTE)
    held = disputes.filter(state=ProposalState.PENDING).count()
    # Withdrawn lately counts too: dispute, withdraw, dispute again must not go round for free.
    since = timezone.now() - timedelta(minutes=settings.VETTED_WITHDRAWN_DISPUTES_COUNT_MINUTES)
    withdrawn = disputes.filter(state=ProposalState.WITHDRAWN, decided_at__gte=since).count()
    if held + withdrawn >= cap:
        lately = (
            f" and withdrew {withdrawn} in the last {settings.VETTED_WITHDRAWN_DISPUTES_COUNT_MINUTES} minutes "
            "(VETTED_WITHDRAWN_DISPUTES_COUNT_MINUTES)"
            if withdrawn
            else ""
        )
        raise LimitReached(
            f"Agent {agent.name!r} already has {held} open disputes{lately}, the limit "
            f"(VETTED_OPEN_DISPUTES_PER_AGENT={cap}); a reviewer must decide some of them before this agent "
            "can dispute another record.",
            open_disputes=held,
            limit=cap,
        )


def withdraw_proposal(proposal: Proposal | str, *, agent: Agent, note: str = "") -> Proposal:
    """The proposing agent takes back its own pending proposal. Withdrawing the
    last pending dispute of a record makes it approved again."""
    with transaction.atomic():
        proposal = locked_proposal(proposal)
        if not isinstance(agent, Agent) or proposal.agent_id != agent.pk:
            raise InvalidTransition(f"Only the agent that made {proposal.public_id} can withdraw it.")
        require_pending(proposal, "withdraw")
        note = v.clean_note(note)
        proposal.state = ProposalState.WITHDRAWN
        proposal.decided_at = timezone.now()
        proposal.decision_note = note
        proposal.save()
        extra = close_extra(proposal)
        audit(
            "proposal.withdrawn",
            actor=agent,
            subject=proposal,
            record=proposal.target,
            proposal=proposal,
            snippet=note,
            extra=extra,
        )
        return proposal
