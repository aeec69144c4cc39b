"""Every state change in Vetted, one function each.

Contract shared by all actions:
- atomic: it either fully happens or changes nothing;
- it re-reads and locks the rows it changes inside its transaction (SQLite
  runs transactions as BEGIN IMMEDIATE, which takes the database write lock
  up front, so the re-read state cannot change before commit; on other
  databases ``select_for_update`` does the locking);
- it validates its inputs and raises a ``reviews.errors.VettedError``
  subclass for bad input or an invalid transition, writing nothing;
- it writes exactly one AuditEvent in the same transaction (an import writes
  one per row it creates).

Views, the REST API, MCP tools, the admin and management commands call these
and never change models themselves.

Actors: a ``User`` (a reviewer), an ``Agent``, or a ``SystemActor``. Only
active users may decide anything; agents may only propose, dispute and
withdraw their own proposals.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from . import validation as v
from .checksum import content_checksum
from .errors import (
    ChecksumMismatch,
    DuplicateContent,
    InvalidTransition,
    NotFound,
    ScopeNotAllowed,
    Unauthorized,
    ValidationFailed,
    VettedError,
)
from .models import (
    SCOPES,
    ActorType,
    Agent,
    AuditEvent,
    Proposal,
    ProposalAction,
    ProposalState,
    Record,
    RecordStatus,
    SubjectType,
)

IMPORT_AGENT_NAME = "import"
TOKEN_PREFIX = "vt_"
_AGENT_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,63}$")


@dataclass(frozen=True)
class SystemActor:
    """A component acting on its own (e.g. an importer); never a reviewer."""

    name: str


Actor = AbstractBaseUser | Agent | SystemActor


# --------------------------------------------------------------------------- audit


def _actor_fields(actor: Actor) -> tuple[str, str]:
    if isinstance(actor, Agent):
        return ActorType.AGENT, actor.name
    if isinstance(actor, SystemActor):
        return ActorType.SYSTEM, actor.name
    return ActorType.USER, actor.get_username()


def _subject_fields(subject) -> tuple[str, str]:
    if isinstance(subject, Record):
        return SubjectType.RECORD, subject.public_id
    if isinstance(subject, Proposal):
        return SubjectType.PROPOSAL, subject.public_id
    if isinstance(subject, Agent):
        return SubjectType.AGENT, subject.public_id
    return SubjectType.USER, subject.get_username()


def _audit(event_type: str, *, actor: Actor, subject, record: Record | None = None,
           proposal: Proposal | None = None, before: str = "", after: str = "",
           snippet: str = "", extra: dict | None = None) -> AuditEvent:
    actor_type, actor_name = _actor_fields(actor)
    subject_type, subject_id = _subject_fields(subject)
    return AuditEvent.objects.create(
        event_type=event_type,
        actor_type=actor_type,
        actor=actor_name,
        subject_type=subject_type,
        subject_id=subject_id,
        record_ref=record.public_id if record else "",
        proposal_ref=proposal.public_id if proposal else "",
        checksum_before=before,
        checksum_after=after,
        snippet=(snippet or "")[:200],
        extra=extra or {},
    )


# --------------------------------------------------------------------------- helpers


def _require_reviewer(actor) -> AbstractBaseUser:
    if isinstance(actor, (Agent, SystemActor)) or not getattr(actor, "is_authenticated", False):
        raise InvalidTransition(
            "Only a reviewer (a signed-in person) can decide; agents and system components may only propose."
        )
    if not actor.is_active:
        raise InvalidTransition(f"User {actor.get_username()!r} is inactive and cannot review.")
    return actor


def _require_active_agent(agent: Agent) -> Agent:
    if not isinstance(agent, Agent):
        raise InvalidTransition("Proposals come from an agent.")
    if not agent.is_active:
        raise InvalidTransition(f"Agent {agent.name!r} has been revoked and can no longer propose.")
    return agent


def _check_agent_scope(agent: Agent, scope: str) -> None:
    if not agent.can_use_scope(scope):
        allowed = ", ".join(agent.scopes) or "none"
        raise ScopeNotAllowed(
            f"Agent {agent.name!r} may not write to scope {scope!r}; its scopes: {allowed}.",
            scope=scope, allowed=list(agent.scopes),
        )


def _locked_record(record: Record | str) -> Record:
    public_id = record if isinstance(record, str) else record.public_id
    try:
        return Record.objects.select_for_update().get(public_id=public_id)
    except Record.DoesNotExist:
        raise NotFound(f"No record with id {public_id!r}.") from None


def _locked_proposal(proposal: Proposal | str) -> Proposal:
    public_id = proposal if isinstance(proposal, str) else proposal.public_id
    try:
        return Proposal.objects.select_for_update().select_related("target").get(public_id=public_id)
    except Proposal.DoesNotExist:
        raise NotFound(f"No proposal with id {public_id!r}.") from None


def _locked_agent(agent: Agent | str) -> Agent:
    name = agent if isinstance(agent, str) else agent.name
    try:
        return Agent.objects.select_for_update().get(name=name)
    except Agent.DoesNotExist:
        raise NotFound(f"No agent named {name!r}.") from None


def _visible_target(agent: Agent, record_id: Record | str) -> Record:
    """The target record, as an agent may see it: out-of-scope records do not exist for it."""
    record = _locked_record(record_id)
    if not agent.can_use_scope(record.scope):
        raise NotFound(f"No record with id {record.public_id!r}.")
    return record


def _require_live(record: Record, doing: str) -> None:
    if record.status == RecordStatus.SUPERSEDED:
        successor = record.superseded_by.public_id if record.superseded_by_id else "a newer record"
        raise InvalidTransition(
            f"Cannot {doing} {record.public_id}: it was superseded by {successor}; act on that record instead.",
            successor=successor,
        )
    if record.status == RecordStatus.RETIRED:
        raise InvalidTransition(f"Cannot {doing} {record.public_id}: it is retired.")


def _require_pending(proposal: Proposal, doing: str) -> None:
    if proposal.state != ProposalState.PENDING:
        who = f" by {proposal.decided_by.get_username()}" if proposal.decided_by_id else ""
        raise InvalidTransition(
            f"Cannot {doing} {proposal.public_id}: it was already {proposal.state}{who}.",
            state=proposal.state,
        )


def _check_not_duplicate(checksum: str, *, ignore_proposal: Proposal | None = None,
                         proposer: Agent | None = None, records_only: bool = False) -> None:
    """Refuse content identical to a live record or a pending proposal.

    For an agent's proposal (``proposer``) only what that agent may be told
    about counts: records it can receive right now and its own pending
    proposals. Anything else identical (another agent's proposal, a record
    withheld from it) is no reason to refuse: refusing would tell it that
    such text exists. The proposal is stored and the reviewer, who sees both,
    decides: accepting one checks ``records_only`` (identical proposals may
    wait side by side), and accepting the other is then refused here.
    """
    existing = Record.objects.live().filter(approved_checksum=checksum)
    if proposer is not None:
        existing = [r for r in existing.deliverable(proposer.scopes) if r.withhold_reason() is None]
    existing = next(iter(existing), None)
    if existing:
        raise DuplicateContent(
            f"An identical approved record already exists: {existing.public_id}.",
            existing_id=existing.public_id,
        )
    if records_only:
        return
    pending = Proposal.objects.filter(content_checksum=checksum, state=ProposalState.PENDING)
    if proposer is not None:
        pending = pending.filter(agent=proposer)
    if ignore_proposal is not None:
        pending = pending.exclude(pk=ignore_proposal.pk)
    pending = pending.first()
    if pending:
        raise DuplicateContent(
            f"An identical proposal is already waiting for review: {pending.public_id}.",
            existing_id=pending.public_id,
        )


def _content_of(obj) -> dict:
    return {name: getattr(obj, name) for name in v.CONTENT_FIELDS}


def _checksum_of(content: dict) -> str:
    return content_checksum(kind=content["kind"], scope=content["scope"], title=content["title"],
                            body=content["body"], tags=content["tags"])


def _provenance(agent: Agent | None, source_tool: str, session: str) -> dict:
    return {
        "source_tool": v.clean_short("source_tool", source_tool or (agent.source_tool if agent else ""), v.SOURCE_TOOL_MAX),
        "session": v.clean_short("session", session, v.SESSION_MAX),
    }


def _close_fulfilled(record: Record, *, actor, note: str, accepting: Proposal | None = None) -> list[str]:
    """Mark the pending disputes and retirements of ``record`` accepted: once
    it is retired or superseded they are fulfilled. ``accepting`` (the
    proposal whose acceptance did this) is left to its caller."""
    now = timezone.now()
    pending = Proposal.objects.select_for_update().filter(
        target=record, state=ProposalState.PENDING, action__in=[ProposalAction.DISPUTE, ProposalAction.RETIRE],
    )
    if accepting is not None:
        pending = pending.exclude(pk=accepting.pk)
    closed = list(pending.values_list("public_id", flat=True))
    if closed:
        Proposal.objects.filter(public_id__in=closed).update(
            state=ProposalState.ACCEPTED, decided_by=actor, decided_at=now, decision_note=note, updated_at=now,
        )
    return closed


def _new_record(content: dict, *, reviewer, proposal: Proposal | None, supersedes: Record | None,
                reason: str) -> Record:
    now = timezone.now()
    record = Record(
        **content,
        status=RecordStatus.APPROVED,
        approved_checksum=_checksum_of(content),
        approved_at=now,
        approved_by=reviewer,
        verified_at=now,
        supersedes=supersedes,
        proposed_by=proposal.agent if proposal else None,
        source_tool=proposal.source_tool if proposal else "reviewer",
        session=proposal.session if proposal else "",
        reason=reason,
    )
    record.save()
    if supersedes is not None:
        supersedes.status = RecordStatus.SUPERSEDED
        supersedes.superseded_by = record
        supersedes.save(update_fields=["status", "superseded_by", "updated_at"])
    return record


def _apply_changes(base: dict, changes: dict | None, *, lock_scope: str | None) -> tuple[dict, dict]:
    """Validate ``base`` with the reviewer's ``changes`` applied; return (content, changed fields)."""
    changes = dict(changes or {})
    unknown = sorted(set(changes) - set(v.CONTENT_FIELDS))
    if unknown:
        raise ValidationFailed({name: f"cannot be changed; editable fields: {', '.join(v.CONTENT_FIELDS)}" for name in unknown})
    content = v.clean_content({**base, **changes})
    if lock_scope is not None and content["scope"] != lock_scope:
        raise ValidationFailed({"scope": f"a revision keeps the record's scope ({lock_scope}); moving a record between scopes is a separate action"})
    changed = {}
    for name in changes:
        value = content[name]
        if value != base.get(name):
            changed[name] = value.isoformat() if isinstance(value, date) else value
    return content, changed


# --------------------------------------------------------------------------- proposing


def propose_create(*, agent: Agent, reason: str, source_tool: str = "", session: str = "",
                   full_duplicate_check: bool = False, **fields) -> Proposal:
    """An agent asks for a new record. Returns the pending proposal.

    ``fields``: kind, scope, title, body, tags, review_by, valid_from,
    valid_until, confidence, metadata. Refuses exact duplicates of an approved
    record or a pending proposal (DuplicateContent with the existing id).
    """
    with transaction.atomic():
        agent = _require_active_agent(Agent.objects.select_for_update().get(pk=agent.pk))
        content = v.clean_content(fields)
        reason = v.clean_reason(reason)
        _check_agent_scope(agent, content["scope"])
        checksum = _checksum_of(content)
        _check_not_duplicate(checksum, proposer=None if full_duplicate_check else agent)
        proposal = Proposal.objects.create(
            action=ProposalAction.CREATE, agent=agent, reason=reason, content_checksum=checksum,
            **content, **_provenance(agent, source_tool, session),
        )
        _audit("proposal.created", actor=agent, subject=proposal, proposal=proposal,
               after=checksum, snippet=proposal.title, extra={"action": proposal.action, "scope": proposal.scope})
        return proposal


def propose_revision(target: Record | str, *, agent: Agent, reason: str, source_tool: str = "",
                     session: str = "", full_duplicate_check: bool = False, **changes) -> Proposal:
    """An agent asks to replace ``target`` with changed content.

    Fields not given keep the target's values (review_by gets a fresh default).
    The scope cannot change. A revision that changes nothing is refused.
    """
    with transaction.atomic():
        agent = _require_active_agent(Agent.objects.select_for_update().get(pk=agent.pk))
        record = _visible_target(agent, target)
        _require_live(record, "revise")
        reason = v.clean_reason(reason)
        base = _content_of(record)
        base["review_by"] = None
        content, changed = _apply_changes(base, changes, lock_scope=record.scope)
        checksum = _checksum_of(content)
        if checksum == record.approved_checksum:
            raise ValidationFailed({"body": f"the revision is identical to {record.public_id}; change the title, body, kind or tags"})
        _check_not_duplicate(checksum, proposer=None if full_duplicate_check else agent)
        proposal = Proposal.objects.create(
            action=ProposalAction.REVISE, target=record, agent=agent, reason=reason,
            content_checksum=checksum, **content, **_provenance(agent, source_tool, session),
        )
        _audit("proposal.created", actor=agent, subject=proposal, record=record, proposal=proposal,
               before=record.approved_checksum, after=checksum, snippet=proposal.title,
               extra={"action": proposal.action, "changed": sorted(changed)})
        return proposal


def propose_retirement(target: Record | str, *, agent: Agent, reason: str, source_tool: str = "",
                       session: str = "") -> Proposal:
    """An agent asks for ``target`` to be retired (it no longer holds)."""
    with transaction.atomic():
        agent = _require_active_agent(Agent.objects.select_for_update().get(pk=agent.pk))
        record = _visible_target(agent, target)
        _require_live(record, "retire")
        reason = v.clean_reason(reason)
        # Only the agent's own pending retirement: another agent's is not this
        # agent's to know of (the reviewer sees both; accepting one closes the other).
        pending = Proposal.objects.filter(target=record, action=ProposalAction.RETIRE, state=ProposalState.PENDING,
                                          agent=agent).first()
        if pending:
            raise DuplicateContent(
                f"A retirement of {record.public_id} is already waiting for review: {pending.public_id}.",
                existing_id=pending.public_id,
            )
        proposal = Proposal.objects.create(
            action=ProposalAction.RETIRE, target=record, agent=agent, reason=reason,
            **_provenance(agent, source_tool, session),
        )
        _audit("proposal.created", actor=agent, subject=proposal, record=record, proposal=proposal,
               before=record.approved_checksum, snippet=record.title, extra={"action": proposal.action})
        return proposal


def dispute_record(target: Record | str, *, agent: Agent, reason: str, source_tool: str = "",
                   session: str = "") -> Proposal:
    """An agent says ``target`` is wrong. The record is disputed at once (so it
    is withheld from search) and the dispute waits in the inbox."""
    with transaction.atomic():
        agent = _require_active_agent(Agent.objects.select_for_update().get(pk=agent.pk))
        record = _visible_target(agent, target)
        _require_live(record, "dispute")
        reason = v.clean_reason(reason)
        pending = Proposal.objects.filter(target=record, action=ProposalAction.DISPUTE,
                                          state=ProposalState.PENDING, agent=agent).first()
        if pending:
            raise DuplicateContent(
                f"Agent {agent.name!r} already disputes {record.public_id}: {pending.public_id}.",
                existing_id=pending.public_id,
            )
        proposal = Proposal.objects.create(
            action=ProposalAction.DISPUTE, target=record, agent=agent, reason=reason,
            **_provenance(agent, source_tool, session),
        )
        was = record.status
        record.status = RecordStatus.DISPUTED
        record.save(update_fields=["status", "updated_at"])
        _audit("record.disputed", actor=agent, subject=record, record=record, proposal=proposal,
               before=record.approved_checksum, snippet=reason, extra={"previous_status": was})
        return proposal


def withdraw_proposal(proposal: Proposal | str, *, agent: Agent, note: str = "") -> Proposal:
    """The proposing agent takes back its own pending proposal. Withdrawing the
    last pending dispute of a record makes it approved again."""
    with transaction.atomic():
        proposal = _locked_proposal(proposal)
        if not isinstance(agent, Agent) or proposal.agent_id != agent.pk:
            raise InvalidTransition(f"Only the agent that made {proposal.public_id} can withdraw it.")
        _require_pending(proposal, "withdraw")
        note = v.clean_note(note)
        proposal.state = ProposalState.WITHDRAWN
        proposal.decided_at = timezone.now()
        proposal.decision_note = note
        proposal.save()
        extra = {"action": proposal.action}
        if proposal.action == ProposalAction.DISPUTE:
            extra["dispute_cleared"] = _end_dispute_if_last(proposal.target)
        _audit("proposal.withdrawn", actor=agent, subject=proposal, record=proposal.target,
               proposal=proposal, snippet=note, extra=extra)
        return proposal


def _end_dispute_if_last(record: Record) -> bool:
    record = _locked_record(record)
    still = Proposal.objects.filter(target=record, action=ProposalAction.DISPUTE, state=ProposalState.PENDING).exists()
    if record.status == RecordStatus.DISPUTED and not still:
        record.status = RecordStatus.APPROVED
        record.save(update_fields=["status", "updated_at"])
        return True
    return False


# --------------------------------------------------------------------------- deciding


def accept_proposal(proposal: Proposal | str, *, actor, note: str = "") -> Proposal:
    """A reviewer accepts a pending proposal as proposed.

    create  -> a new approved record;
    revise  -> a new approved record that supersedes the target;
    retire  -> the target is retired;
    dispute -> the dispute is upheld: the target is retired (to correct it
               instead, use accept_proposal_with_revision).
    Pending disputes and retirements of a record that is retired or
    superseded are closed as fulfilled in the same transaction.
    """
    return _accept(proposal, actor=actor, note=note, changes=None)


def accept_proposal_with_revision(proposal: Proposal | str, *, actor, changes: dict, note: str = "") -> Proposal:
    """A reviewer accepts an edited version. ``changes`` maps content fields to
    the approved values; the proposal keeps the proposed text and records the
    changed fields in ``reviewer_changes``. For a dispute, the changes apply
    to the disputed record's text and produce its corrected successor."""
    if not changes:
        raise ValidationFailed({"changes": "no changes given; use accept_proposal to accept as proposed"})
    return _accept(proposal, actor=actor, note=note, changes=changes)


def _accept(proposal, *, actor, note: str, changes: dict | None) -> Proposal:
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        proposal = _locked_proposal(proposal)
        _require_pending(proposal, "accept")
        note = v.clean_note(note)
        target = _locked_record(proposal.target) if proposal.target_id else None
        if target is not None:
            _require_live(target, f"accept {proposal.public_id} on")
        extra: dict = {"action": proposal.action}
        before = target.approved_checksum if target else ""
        after = ""
        result = target

        if proposal.action in (ProposalAction.CREATE, ProposalAction.REVISE) or (
            proposal.action == ProposalAction.DISPUTE and changes
        ):
            if proposal.action == ProposalAction.DISPUTE:
                base = _content_of(target)
                base["review_by"] = None
            else:
                base = _content_of(proposal)
            lock_scope = target.scope if target is not None else None
            if changes:
                content, changed = _apply_changes(base, changes, lock_scope=lock_scope)
            else:
                content, changed = v.clean_content(base), {}
            if changes and proposal.action != ProposalAction.DISPUTE and not changed:
                raise ValidationFailed({"changes": "the edited version is identical to the proposal; accept it as proposed"})
            checksum = _checksum_of(content)
            if target is not None and checksum == target.approved_checksum:
                raise ValidationFailed({"changes": f"the result is identical to {target.public_id}"})
            _check_not_duplicate(checksum, records_only=True)
            result = _new_record(content, reviewer=reviewer, proposal=proposal, supersedes=target,
                                 reason=proposal.reason)
            after = checksum
            proposal.reviewer_changes = changed
            if target is not None:
                extra["supersedes"] = target.public_id
                extra["closed_proposals"] = _close_fulfilled(
                    target, actor=reviewer, accepting=proposal,
                    note=f"Resolved: {target.public_id} was superseded by {result.public_id}.",
                )
            if changed:
                extra["reviewer_changed"] = sorted(changed)
        elif proposal.action in (ProposalAction.RETIRE, ProposalAction.DISPUTE):
            if changes:
                raise ValidationFailed({"changes": "a retirement has no text to edit; accept or reject it"})
            target.status = RecordStatus.RETIRED
            target.save(update_fields=["status", "updated_at"])
            extra["closed_proposals"] = _close_fulfilled(
                target, actor=reviewer, accepting=proposal,
                note=f"Resolved: {target.public_id} was retired ({proposal.public_id}).",
            )
            extra["retired"] = target.public_id

        proposal.state = ProposalState.ACCEPTED
        proposal.decided_by = reviewer
        proposal.decided_at = timezone.now()
        proposal.decision_note = note
        proposal.result_record = result
        proposal.save()
        _audit("proposal.accepted", actor=reviewer, subject=proposal, record=result, proposal=proposal,
               before=before, after=after, snippet=note or proposal.title or (target.title if target else ""),
               extra=extra)
        return proposal


def reject_proposal(proposal: Proposal | str, *, actor, note: str = "") -> Proposal:
    """A reviewer rejects a pending proposal; the note is shown to the agent.
    Rejecting the last pending dispute of a record clears the dispute."""
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        proposal = _locked_proposal(proposal)
        _require_pending(proposal, "reject")
        note = v.clean_note(note)
        proposal.state = ProposalState.REJECTED
        proposal.decided_by = reviewer
        proposal.decided_at = timezone.now()
        proposal.decision_note = note
        proposal.save()
        extra = {"action": proposal.action}
        if proposal.action == ProposalAction.DISPUTE:
            extra["dispute_cleared"] = _end_dispute_if_last(proposal.target)
        _audit("proposal.rejected", actor=reviewer, subject=proposal, record=proposal.target,
               proposal=proposal, snippet=note or proposal.title, extra=extra)
        return proposal


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
        _check_not_duplicate(checksum)
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
        _check_not_duplicate(checksum)
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


# --------------------------------------------------------------------------- agents and accounts


def _token_digest(token: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is enough: there is nothing
    # to brute-force, and lookups by digest stay a single index probe.
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_agent(name: str, *, scopes: Iterable[str], actor, source_tool: str = "") -> tuple[Agent, str]:
    """Create an agent and return it with its raw token, which is not stored
    and cannot be shown again (only its SHA-256 digest is kept)."""
    with transaction.atomic():
        _require_reviewer(actor)
        name = str(name or "").strip().lower()
        errors = {}
        if not _AGENT_NAME_RE.match(name):
            errors["name"] = "2-64 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
        elif name == IMPORT_AGENT_NAME:
            errors["name"] = f"{IMPORT_AGENT_NAME!r} is reserved for imports"
        elif Agent.objects.filter(name=name).exists():
            errors["name"] = f"an agent named {name!r} already exists"
        scope_list = sorted({str(s).strip().lower() for s in scopes if str(s).strip()})
        bad = [s for s in scope_list if s not in SCOPES]
        if bad or not scope_list:
            errors["scopes"] = f"got {', '.join(bad) or 'none'}; choose one or more of: {', '.join(SCOPES)}"
        if errors:
            raise ValidationFailed(errors)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        agent = Agent.objects.create(
            name=name, scopes=scope_list, token_digest=_token_digest(token), token_prefix=token[:10],
            source_tool=v.clean_short("source_tool", source_tool, v.SOURCE_TOOL_MAX),
            created_by=actor.get_username(),
        )
        _audit("agent.created", actor=actor, subject=agent, snippet=name, extra={"scopes": scope_list})
        return agent, token


def revoke_agent(agent: Agent | str, *, actor) -> Agent:
    """Revoke an agent: its token stops working at once. Its proposals stay."""
    with transaction.atomic():
        _require_reviewer(actor)
        agent = _locked_agent(agent)
        if not agent.is_active:
            raise InvalidTransition(f"Agent {agent.name!r} was already revoked on {agent.revoked_at:%Y-%m-%d}.")
        agent.is_active = False
        agent.revoked_at = timezone.now()
        agent.save(update_fields=["is_active", "revoked_at"])
        _audit("agent.revoked", actor=actor, subject=agent, snippet=agent.name)
        return agent


def rotate_agent_token(agent: Agent | str, *, actor) -> tuple[Agent, str]:
    """Give an active agent a new token; the old one, if any, stops working at
    once (an agent imported without token digests has none and gets its
    first here). Returns the agent and the raw token (shown once, never stored)."""
    with transaction.atomic():
        _require_reviewer(actor)
        agent = _locked_agent(agent)
        if agent.name == IMPORT_AGENT_NAME:
            raise InvalidTransition(f"{IMPORT_AGENT_NAME!r} is the tokenless import agent; it never gets a token.")
        if not agent.is_active:
            raise InvalidTransition(f"Agent {agent.name!r} is revoked; create a new agent instead.")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        old_prefix = agent.token_prefix if agent.token_digest else ""
        agent.token_digest = _token_digest(token)
        agent.token_prefix = token[:10]
        agent.save(update_fields=["token_digest", "token_prefix"])
        _audit("agent.token_rotated", actor=actor, subject=agent, snippet=agent.name,
               extra={"old_prefix": old_prefix, "new_prefix": agent.token_prefix})
        return agent, token


def agent_for_token(token: str) -> Agent:
    """The active agent a bearer token belongs to; raises Unauthorized with a
    message that says what is wrong and how to fix it. Reads only."""
    token = (token or "").strip()
    if not token:
        raise Unauthorized("Missing agent token: send the header 'Authorization: Bearer vt_...' "
                           "(create one with `python manage.py create_agent NAME --scopes ...`).")
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        raise Unauthorized(f"Malformed agent token: Vetted tokens start with {TOKEN_PREFIX!r}.")
    agent = Agent.objects.filter(token_digest=_token_digest(token)).first()
    if agent is None:
        raise Unauthorized("Unknown agent token: it was never issued here or has been replaced; "
                           "ask the reviewer for a new one (`python manage.py connect CLIENT --agent NAME`).")
    if not agent.is_active:
        when = f" on {agent.revoked_at:%Y-%m-%d}" if agent.revoked_at else ""
        raise Unauthorized(f"Agent {agent.name!r} was revoked{when}; its token no longer works. "
                           "Ask the reviewer for a new agent.")
    return agent


SEEN_EVERY_SECONDS = 60


def note_agent_seen(agent: Agent) -> None:
    """Bookkeeping, not a change to memory: stamp ``last_seen_at`` at most once
    a minute per agent, so the inbox can show when an agent was last active.
    Writes no audit event (it would record every request); changes nothing
    an agent or a reviewer decides."""
    now = timezone.now()
    if agent.last_seen_at and (now - agent.last_seen_at).total_seconds() < SEEN_EVERY_SECONDS:
        return
    Agent.objects.filter(pk=agent.pk).update(last_seen_at=now)
    agent.last_seen_at = now


def import_agent() -> Agent:
    """The agent that import proposals are attributed to (created on first use)."""
    with transaction.atomic():
        agent = Agent.objects.filter(name=IMPORT_AGENT_NAME).first()
        if agent is None:
            agent = Agent.objects.create(name=IMPORT_AGENT_NAME, scopes=list(SCOPES), source_tool="import",
                                         created_by="system")
            _audit("agent.created", actor=SystemActor("system:import"), subject=agent, snippet=agent.name,
                   extra={"scopes": list(SCOPES), "tokenless": True})
        return agent


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def create_first_reviewer(*, username: str, password: str, email: str = "", remote_addr: str):
    """First-run setup: create the reviewer account. Only while no user exists,
    and only from the machine itself (the site binds to 127.0.0.1)."""
    User = get_user_model()
    with transaction.atomic():
        if not is_loopback(remote_addr):
            raise InvalidTransition("The first account can only be created from this machine (localhost); "
                                    "or run `python manage.py createsuperuser`.")
        if User.objects.exists():
            raise InvalidTransition("The reviewer account already exists; sign in instead.")
        username = (username or "").strip()
        errors = {}
        if not username or not re.fullmatch(r"[\w.@+-]{1,150}", username):
            errors["username"] = "1-150 characters: letters, digits and @ . + - _"
        email = (email or "").strip()
        if email:
            try:
                validate_email(email)
            except DjangoValidationError:
                errors["email"] = "not a valid email address (or leave it empty)"
        candidate = User(username=username, email=email)
        try:
            validate_password(password or "", candidate)
        except DjangoValidationError as exc:
            errors["password"] = " ".join(exc.messages)
        if errors:
            raise ValidationFailed(errors)
        user = User.objects.create_superuser(username=username, email=email or "", password=password)
        _audit("user.created", actor=SystemActor("system:first-run"), subject=user, snippet=username,
               extra={"superuser": True, "remote_addr": remote_addr})
        return user


# --------------------------------------------------------------------------- import


@dataclass
class ImportResult:
    created: list[str] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        return {"created": len(self.created), "errors": self.errors, "ids": self.created}


class ImportFailed(VettedError):
    code = "import_failed"

    def __init__(self, result: ImportResult):
        super().__init__(f"{len(result.errors)} line(s) invalid; nothing was imported.", errors=result.errors)
        self.result = result


def import_records(rows: Iterable[tuple[int, dict]], *, agent: Agent | None = None, reviewer=None,
                   partial: bool = False, reason: str = "Imported from a file",
                   prior_errors: Iterable[dict] = (),
                   on_row: Callable[[], None] | None = None) -> ImportResult:
    """Import ``(line_number, fields)`` rows as create proposals (from ``agent``,
    default the tokenless ``import`` agent). With ``reviewer``, each proposal is
    accepted by that person at once. All or nothing unless ``partial``: then
    valid rows are kept and invalid ones reported. Each row goes through
    propose_create (and accept_proposal), so the same write rules and
    duplicate checks apply, including duplicates between rows of the file.
    ``prior_errors`` are problems the caller found before (e.g. unparsable
    lines); they count like row errors and are reported with them, by line.
    """
    allowed = {"title", "body", "kind", "scope", "tags", "review_by", "metadata", "valid_from", "valid_until",
               "confidence", "reason", "session"}
    result = ImportResult(errors=list(prior_errors))
    line_of: dict[str, int] = {}  # id created by this import -> its line
    with transaction.atomic():
        if reviewer is not None:
            _require_reviewer(reviewer)
        source = agent or import_agent()
        for line, fields in rows:
            try:
                if not isinstance(fields, dict):
                    raise ValidationFailed({"line": "must be a JSON object"})
                unknown = sorted(set(fields) - allowed)
                if unknown:
                    raise ValidationFailed({name: f"unknown field; allowed: {', '.join(sorted(allowed))}" for name in unknown})
                data = dict(fields)
                row_reason = data.pop("reason", None) or reason
                session = data.pop("session", "")
                with transaction.atomic():  # a savepoint: a bad row leaves no trace
                    proposal = propose_create(agent=source, reason=row_reason, source_tool="import",
                                              session=session, full_duplicate_check=True, **data)
                    if reviewer is not None:
                        proposal = accept_proposal(proposal, actor=reviewer, note="Approved at import")
                created_id = proposal.result_record.public_id if reviewer is not None else proposal.public_id
                line_of[created_id] = line
                result.created.append(created_id)
            except DuplicateContent as exc:
                if exc.existing_id in line_of:
                    # Without --partial that id is rolled back; name the line instead.
                    earlier = line_of[exc.existing_id]
                    kept = f" ({exc.existing_id})" if partial else ""
                    result.errors.append({"line": line, "error": f"identical to line {earlier}{kept}"})
                else:
                    result.errors.append({"line": line, "error": exc.message})
            except VettedError as exc:
                result.errors.append({"line": line, "error": exc.message})
            if on_row:
                on_row()
        result.errors.sort(key=lambda e: e["line"])
        if result.errors and not partial:
            raise ImportFailed(result)
    return result


# --------------------------------------------------------------------------- snapshot import (export_json / import_json)


@dataclass
class ImportSummary:
    counts: dict
    details: dict

    def as_dict(self) -> dict:
        return {**self.counts, **self.details}


def import_snapshot(data: dict, *, actor, progress: Callable[[int], None] | None = None) -> ImportSummary:
    """Load a ``vetted-export`` document (see reviews/portability.py) into an
    instance that has no records and no proposals yet, all or nothing.

    Records, proposals, agents and the write log are copied as they are
    (public ids, statuses, checksums, timestamps, supersession chains, audit
    rows with their ids); users named in the file map onto existing accounts
    or are created inactive without a password. The copied audit rows are
    history, not new changes; this import itself writes one more event,
    ``snapshot.imported``. Raises portability.SnapshotInvalid for a bad file
    and InvalidTransition for an instance that already holds memory."""
    from . import portability

    counts = portability.validate_snapshot(data)
    with transaction.atomic():
        reviewer = _require_reviewer(actor)
        if Record.objects.exists() or Proposal.objects.exists():
            raise InvalidTransition(
                f"This instance already holds {Record.objects.count()} record(s) and {Proposal.objects.count()} "
                "proposal(s); import_json only loads into an empty instance (a fresh VETTED_HOME, or restore a "
                "backup instead).")
        details = portability.write_snapshot(data, progress=progress)
        _audit("snapshot.imported", actor=reviewer, subject=reviewer, snippet=f"vetted-export v{data['version']}",
               extra={**counts, "scopes": data["scopes"], "exported_at": data["exported_at"],
                      "audit_id_offset": details["audit_id_offset"],
                      "users_created_inactive": details["users_created_inactive"],
                      "agents_created": details["agents_created"], "agents_mapped": details["agents_mapped"]})
        return ImportSummary(counts=counts, details=details)
