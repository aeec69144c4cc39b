"""What every action shares: row locks, the checks that refuse a wrong actor
or state, and content/checksum helpers (the actor types and the audit writer
live in ``audit`` and are re-exported here).

Private to the ``reviews.actions`` package: other code calls the actions."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.utils import timezone

from .. import confusables, policy, space_access
from .. import validation as v
from ..checksum import CHECKSUM_FIELDS, checksum_of
from ..errors import (
    DuplicateContent,
    InvalidTransition,
    NotFound,
    SpaceNotAllowed,
    ValidationFailed,
)
from ..models import (
    Agent,
    Proposal,
    ProposalAction,
    ProposalState,
    Record,
    RecordQuerySet,
    RecordStatus,
)
from ._audit import Actor as Actor
from ._audit import SystemActor as SystemActor
from ._audit import audit as audit
from .content import skeleton_of

# --------------------------------------------------------------------------- helpers


def require_reviewer(actor: object) -> User:
    """``actor`` as a person who may decide: an active staff account."""
    if not isinstance(actor, get_user_model()) or not actor.is_authenticated:
        raise InvalidTransition(
            "Only a reviewer (a signed-in person) can decide; agents and system components may only propose."
        )
    if not actor.is_active:
        raise InvalidTransition(f"User {actor.get_username()!r} is inactive and cannot review.")
    # The same rule as the site and the admin: deciding is for staff accounts,
    # so a plain account (e.g. one made for the API docs) cannot decide from the CLI either.
    if not actor.is_staff:
        raise InvalidTransition(
            f"User {actor.get_username()!r} is not a reviewer (staff) account and cannot decide; "
            "a superuser can make it one (admin: Users, 'Make reviewer'; or `review account staff NAME --on`)."
        )
    return actor


def space_of(obj: Proposal | Record) -> str:
    return space_access.space_of(obj)


# What a person may do instead, when the two-person rule refuses a change
# one person would make alone (by verb; see reviews/policy.RULES).
_TWO_PERSON_WAY = {
    "accept_edited": "accepting an edited version is refused there: the other reviewer would approve text they "
    "have not seen; reject it with a note, or accept it as proposed",
    "correct": "a correction is approved text too: keep or retire the record here, or let an agent propose the "
    "corrected text for two reviewers to accept",
    "revise": "let an agent propose the revision, for two reviewers to accept",
    "approve_current": "restore the approved text, or let an agent propose the current text as a revision",
    "retire": "let an agent propose its retirement (or dispute it, which withholds it now), for two reviewers to "
    "accept",
    "move": "let an agent propose the text in the space that needs two approvals, for two reviewers to accept",
}


def policy_slugs(obj: Proposal | Record) -> tuple[list[str], int]:
    """The spaces the policy is asked about for ``obj`` and how many are the rule's first part: a record
    changed outside Vetted counts in its approved space too (a space edited by hand moves nothing)."""
    slugs = [space_of(obj)]
    record = obj if isinstance(obj, Record) else obj.target
    if record is not None and record.edited_since_approval:
        approved = record.approved_text()
        if approved is not None and approved["space"] not in slugs:
            slugs.append(approved["space"])
    return slugs, len(slugs)


def require_role(reviewer: User, obj: Proposal | Record, doing: str, *, verb: str, also: str = "") -> policy.Outcome:
    """Ask the permission policy (reviews/policy.py) whether ``reviewer`` may
    ``verb`` ``obj``: in its space (a record changed outside Vetted: in its
    approved space too) and in ``also``, a second space (a move's
    destination). Returns ALLOWED, or COUNTED for an approval the two-person
    rule counts. Not a member at all: NotFound, the same as an unknown id,
    since another person's space does not exist for them. A reader: refused.
    Refused by the two-person rule: named after the space it is about, which
    the person decides in."""
    slugs, sources = policy_slugs(obj)
    if also:
        slugs.append(also)
    answer = policy.ask(reviewer, verb, slugs, sources)
    if answer.outcome in (policy.Outcome.ALLOWED, policy.Outcome.COUNTED):
        return answer.outcome
    if answer.outcome == policy.Outcome.ACCOUNT:
        name = reviewer.get_username()
        raise InvalidTransition(f"User {name!r} is not an active reviewer account and cannot decide.")
    if answer.outcome == policy.Outcome.NOT_FOUND:
        if also and answer.slug == also and also not in slugs[:-1]:
            raise NotFound(f"No space {also!r}.")
        what = "proposal" if isinstance(obj, Proposal) else "record"
        raise NotFound(f"No {what} with id {obj.public_id!r}.")
    if answer.outcome in (policy.Outcome.NOT_DECIDING, policy.Outcome.NOT_OWNER):
        raise InvalidTransition(
            f"Cannot {doing} {obj.public_id}: {reviewer.get_username()} is a {answer.standing.value} of {answer.slug}; "
            "readers see records and the write log and decide nothing (an owner can make you a reviewer)."
        )
    raise InvalidTransition(
        f"Cannot {doing} {obj.public_id}: {answer.slug} needs two approvals, and this change would take effect "
        f"with one person's alone; {_TWO_PERSON_WAY.get(verb, 'it needs a second reviewer')}.",
        required_approvals=2,
    )


def require_active_agent(agent: Agent) -> Agent:
    if not isinstance(agent, Agent):
        raise InvalidTransition("Proposals come from an agent.")
    if not agent.is_active:
        raise InvalidTransition(f"Agent {agent.name!r} has been revoked and can no longer propose.")
    return agent


def check_agent_space(agent: Agent, space: str) -> None:
    if not agent.can_use_space(space):
        allowed = ", ".join(agent.spaces) or "none"
        raise SpaceNotAllowed(
            f"Agent {agent.name!r} may not write to space {space!r}; its spaces: {allowed}.",
            space=space,
            allowed=list(agent.spaces),
        )


# FOR NO KEY UPDATE (no_key) on PostgreSQL. It serialises the
# actions on a row as FOR UPDATE does, but lets other transactions' foreign-key
# checks (FOR KEY SHARE, run at COMMIT: Django's keys are deferred) through; with
# FOR UPDATE a proposal committing beside an agent's next write could deadlock
# (met under `stress --daemons 2`). SQLite ignores it (BEGIN IMMEDIATE).
def locked_record(record: Record | str) -> Record:
    public_id = record if isinstance(record, str) else record.public_id
    try:
        return Record.objects.select_for_update(no_key=True).get(public_id=public_id)
    except Record.DoesNotExist:
        raise NotFound(f"No record with id {public_id!r}.") from None


def locked_proposal(proposal: Proposal | str) -> Proposal:
    public_id = proposal if isinstance(proposal, str) else proposal.public_id
    try:
        # of=self: PostgreSQL cannot lock the nullable side of the outer join
        # to the target (actions lock a target with locked_record); SQLite ignores it.
        return Proposal.objects.select_for_update(of=("self",)).select_related("target").get(public_id=public_id)
    except Proposal.DoesNotExist:
        raise NotFound(f"No proposal with id {public_id!r}.") from None


def locked_agent(agent: Agent | str) -> Agent:
    name = agent if isinstance(agent, str) else agent.name
    try:
        return Agent.objects.select_for_update(no_key=True).get(name=name)
    except Agent.DoesNotExist:
        raise NotFound(f"No agent named {name!r}.") from None


def visible_target(agent: Agent, record_id: Record | str) -> Record:
    """The target record, as an agent may see it: outside-space records do not
    exist for it. For a record changed outside Vetted both its current and
    its approved space must be the agent's (a space edited by hand moves
    nothing between spaces)."""
    record = locked_record(record_id)
    approved = record.approved_text() if record.edited_since_approval else None
    spaces = {record.space, approved["space"]} if approved else {record.space}
    if not all(agent.can_use_space(space) for space in spaces):
        raise NotFound(f"No record with id {record.public_id!r}.")
    return record


def require_live(record: Record, doing: str, viewer: object = None) -> None:
    """Refuse a superseded or retired ``record``. The successor of a
    superseded record is named only when ``viewer`` (a person or an agent)
    may see its space: a record moved to a space they do not belong to must
    not tell them where it went, nor its new id."""
    if record.status == RecordStatus.SUPERSEDED:
        successor = record.superseded_by
        named = successor is not None and _may_see_space(viewer, successor.space)
        shown = successor.public_id if named and successor is not None else "a newer record"
        raise InvalidTransition(
            f"Cannot {doing} {record.public_id}: it was superseded by {shown}; act on that record instead.",
            successor=shown,
        )
    if record.status == RecordStatus.RETIRED:
        raise InvalidTransition(f"Cannot {doing} {record.public_id}: it is retired.")


def _may_see_space(viewer: object, slug: str) -> bool:
    if isinstance(viewer, Agent):
        return viewer.can_use_space(slug)
    return viewer is not None and policy.sees(viewer, slug)


def require_pending(proposal: Proposal, doing: str) -> None:
    if proposal.state != ProposalState.PENDING:
        who = f" by {proposal.decided_by.get_username()}" if proposal.decided_by is not None else ""
        raise InvalidTransition(
            f"Cannot {doing} {proposal.public_id}: it was already {proposal.state}{who}.",
            state=proposal.state,
        )


_LOOKS_SAME = "the texts differ only in look-alike or invisible characters"


def check_not_duplicate(
    checksum: str,
    *,
    skeleton: str = "",
    ignore_proposal: Proposal | None = None,
    ignore_record: Record | None = None,
    proposer: Agent | None = None,
    records_only: bool = False,
) -> None:
    """Refuse content identical to a live record or a pending proposal, or
    identical once both are folded to their look-alike skeletons
    (confusables.content_key), which a reviewer could not tell apart either.
    ``ignore_record`` is the record a revision replaces: fixing a look-alike
    letter in it is a change, not a copy.

    For an agent's proposal (``proposer``) only what that agent may be told
    about counts: records it can receive right now and its own pending
    proposals. Anything else identical (another agent's proposal, a record
    withheld from it) is no reason to refuse: refusing would tell it that
    such text exists. The proposal is stored and the reviewer, who sees both,
    decides: accepting one checks ``records_only`` (identical proposals may
    wait side by side), and accepting the other is then refused here.
    """
    records = Record.objects.live()
    if ignore_record is not None:
        records = records.exclude(pk=ignore_record.pk)
    pending = Proposal.objects.filter(state=ProposalState.PENDING)
    if proposer is not None:
        pending = pending.filter(agent=proposer)
    if ignore_proposal is not None:
        pending = pending.exclude(pk=ignore_proposal.pk)

    def first_visible(candidates: RecordQuerySet) -> Record | None:
        if proposer is None:
            return candidates.first()
        return next((r for r in candidates.deliverable(proposer.spaces) if r.withhold_reason() is None), None)

    existing = first_visible(records.filter(approved_checksum=checksum))
    if existing:
        raise DuplicateContent(
            f"An identical approved record already exists: {existing.public_id}.", existing_id=existing.public_id
        )
    waiting = None if records_only else pending.filter(content_checksum=checksum).first()
    if waiting:
        raise DuplicateContent(
            f"An identical proposal is already waiting for review: {waiting.public_id}.", existing_id=waiting.public_id
        )
    if not skeleton:
        return
    existing = first_visible(records.filter(skeleton_checksum=skeleton))
    if existing:
        raise DuplicateContent(
            f"An approved record that looks identical already exists: {existing.public_id} ({_LOOKS_SAME}).",
            existing_id=existing.public_id,
        )
    waiting = None if records_only else pending.filter(skeleton_checksum=skeleton).first()
    if waiting:
        raise DuplicateContent(
            f"A proposal that looks identical is already waiting for review: {waiting.public_id} ({_LOOKS_SAME}).",
            existing_id=waiting.public_id,
        )


def provenance_of(agent: Agent | None, source_tool: str, session: str) -> dict[str, Any]:
    return {
        "source_tool": v.clean_short(
            "source_tool", source_tool or (agent.source_tool if agent else ""), v.SOURCE_TOOL_MAX
        ),
        "session": v.clean_short("session", session, v.SESSION_MAX),
    }


def close_fulfilled(record: Record, *, actor: User, note: str, accepting: Proposal | None = None) -> list[str]:
    """Mark the pending disputes and retirements of ``record`` accepted: once
    it is retired or superseded they are fulfilled. ``accepting`` (the
    proposal whose acceptance did this) is left to its caller."""
    now = timezone.now()
    pending = Proposal.objects.select_for_update().filter(
        target=record,
        state=ProposalState.PENDING,
        action__in=[ProposalAction.DISPUTE, ProposalAction.RETIRE],
    )
    if accepting is not None:
        pending = pending.exclude(pk=accepting.pk)
    closed = list(pending.values_list("public_id", flat=True))
    if closed:
        Proposal.objects.filter(public_id__in=closed).update(
            state=ProposalState.ACCEPTED,
            decided_by=actor,
            decided_at=now,
            decision_note=note,
            updated_at=now,
        )
    return closed


def new_record(
    content: dict[str, Any], *, reviewer: User, proposal: Proposal | None, supersedes: Record | None, reason: str
) -> Record:
    now = timezone.now()
    record = Record(
        **content,
        status=RecordStatus.APPROVED,
        approved_checksum=checksum_of(content),
        approved_content={name: content[name] for name in CHECKSUM_FIELDS},
        skeleton_checksum=skeleton_of(content),
        title_skeleton=confusables.title_key(content["title"]),
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


_KEEPS_SPACE = "a revision keeps the record's space ({space}); moving a record between spaces is a separate action"
# The space of a proposal is locked while it is accepted (reviews/policy.py):
# a changed space would need the destination's role and approval rule, which
# is what moving the accepted record checks.
PROPOSAL_KEEPS_SPACE = (
    "a proposal is accepted into its own space ({space}); to put it in another space, accept it and then "
    "move the record (a move needs a deciding role in both spaces and follows both spaces' approval rules)"
)


def apply_changes(
    base: dict[str, Any], changes: dict[str, Any] | None, *, lock_space: str | None, space_refusal: str = ""
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate ``base`` with the reviewer's ``changes`` applied; return (content, changed fields)."""
    changes = dict(changes or {})
    unknown = sorted(set(changes) - set(v.CONTENT_FIELDS))
    if unknown:
        raise ValidationFailed(
            {name: f"cannot be changed; editable fields: {', '.join(v.CONTENT_FIELDS)}" for name in unknown}
        )
    # The space is checked before anything else is validated: a changed space
    # is refused whatever it names, so the answer says nothing of other spaces.
    if lock_space is not None and "space" in changes and str(changes["space"] or "").strip().lower() != lock_space:
        raise ValidationFailed({"space": space_refusal or _KEEPS_SPACE.format(space=lock_space)})
    content = v.clean_content({**base, **changes})
    changed = {}
    for name in changes:
        value = content[name]
        if value != base.get(name):
            changed[name] = value.isoformat() if isinstance(value, date) else value
    return content, changed


def close_extra(proposal: Proposal) -> dict[str, Any]:
    """The audit ``extra`` of a proposal closed without being applied (rejected
    or withdrawn): its action and, for a dispute, whether closing it ended
    its record's dispute (the last pending one makes the record approved again)."""
    extra: dict[str, Any] = {"action": proposal.action}
    if proposal.action == ProposalAction.DISPUTE and proposal.target is not None:
        extra["dispute_cleared"] = _end_dispute_if_last(proposal.target)
    return extra


def _end_dispute_if_last(record: Record) -> bool:
    record = locked_record(record)
    still = Proposal.objects.filter(target=record, action=ProposalAction.DISPUTE, state=ProposalState.PENDING).exists()
    if record.status == RecordStatus.DISPUTED and not still:
        record.status = RecordStatus.APPROVED
        record.save(update_fields=["status", "updated_at"])
        return True
    return False
