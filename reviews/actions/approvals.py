"""The two-person rule: in a space with ``required_approvals`` 2
a proposal becomes true only at the second accept by a different reviewer.

- the first accept is stored (ProposalApproval) and audited
  (``proposal.approved``); the proposal stays pending and shows it;
- the same reviewer twice is refused, and so is the person who owns the
  proposing agent (they may not approve their own agent's proposal there);
- an approval counts only for the change it saw (action, the target's
  approved checksum, the proposal's text; ``approval_key``): a revision
  resets the count;
- an approval counts only while its person still decides in the space;
- any reject rejects (reject_proposal, unchanged);
- accepting an edited version is refused there (reviews/policy.py, like
  every direct change one person would make alone): the other reviewer
  would be approving text they never saw.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.contrib.auth.models import User

from .. import policy, space_access
from ..errors import InvalidTransition
from ..models import Proposal, ProposalAction
from ..space_models import ProposalApproval
from ._common import audit, policy_slugs, space_of


def approval_key(proposal: Proposal) -> str:
    """What an approval of ``proposal`` is an approval of: its action, the
    approved text of its target and its own text, hashed (a create merged
    into a revision of the same text is a different change)."""
    target = proposal.target
    seen = f"{proposal.action}\n{target.approved_checksum if target is not None else ''}\n{proposal.content_checksum}"
    return hashlib.sha256(seen.encode()).hexdigest()


def approvals_of(proposal: Proposal) -> list[ProposalApproval]:
    """The accepts that still count towards ``proposal``: of the content it
    holds now, by a person who still decides in its space (an approval by
    someone since removed, made a reader or deactivated counts for nothing:
    the rule is two people who may decide there, at the moment it becomes true)."""
    slug = space_of(proposal)
    rows = proposal.approvals.filter(content_checksum=approval_key(proposal)).select_related("user")
    return [a for a in rows if policy.standing(a.user, slug) in (policy.Standing.OWNER, policy.Standing.REVIEWER)]


def proposes(proposal: Proposal, person: object) -> bool:
    """Whether ``person`` stands behind ``proposal``: the person of its agent,
    or the person who wrote it in a file or vault (no agent)."""
    if proposal.agent is not None:
        return proposal.agent.owner_id == getattr(person, "pk", None)
    username = getattr(person, "get_username", lambda: None)()
    return bool(proposal.proposed_by_user) and proposal.proposed_by_user == username


def approval_refusal(
    proposal: Proposal, reviewer: object, counted: list[ProposalApproval], required: int, slug: str
) -> str | None:
    """Why ``reviewer``'s accept of ``proposal`` cannot count in ``slug``,
    which needs ``required`` approvals (``counted`` so far), or None. The
    person of the proposing agent, or the person who wrote it (a file or vault
    edit), never approves it; nobody approves twice."""
    agent = proposal.agent
    if agent is not None and agent.owner_id == getattr(reviewer, "pk", None):
        return (
            f"Cannot accept {proposal.public_id}: you own agent {agent.name!r}, which proposed it, and {slug} "
            f"needs {required} approvals by other reviewers."
        )
    if proposes(proposal, reviewer) and agent is None:
        return (
            f"Cannot accept {proposal.public_id}: you proposed it, and {slug} "
            f"needs {required} approvals by other reviewers."
        )
    if any(a.user_id == getattr(reviewer, "pk", None) for a in counted):
        return f"You already accepted {proposal.public_id}; {slug} needs {required} different reviewers."
    return None


def first_of_two(proposal: Proposal, reviewer: User, note: str) -> bool:
    """Apply the rule for ``reviewer``'s accept of the locked, pending
    ``proposal``. True: recorded as a first approval, the caller stops
    (the proposal stays pending). False: this accept makes it true (one
    approval needed, or this is the second)."""
    required = space_access.required_approvals(space_of(proposal))
    if required < 2:
        return False
    slug = space_of(proposal)
    # An edited accept never gets here: the permission policy refuses it where
    # two must approve (reviews/policy.RULES["accept_edited"]).
    counted = approvals_of(proposal)
    refusal = approval_refusal(proposal, reviewer, counted, required, slug)
    if refusal:
        raise InvalidTransition(refusal)
    if len(counted) + 1 >= required:
        return False
    ProposalApproval.objects.create(
        proposal=proposal, user=reviewer, content_checksum=approval_key(proposal), note=note
    )
    audit(
        "proposal.approved",
        actor=reviewer,
        subject=proposal,
        record=proposal.target,
        proposal=proposal,
        snippet=note or proposal.title,
        extra={"action": proposal.action, "approvals": len(counted) + 1, "required": required},
    )
    return True


@dataclass(frozen=True)
class TwoPersonState:
    """What a card in a space that needs two approvals shows ``person``."""

    required: int
    approved_by: list[str]  # whose accepts count so far
    waiting_for: list[str]  # who may give the next approval
    may_accept: bool  # whether ``person``'s accept would count (the policy and the rule above)
    may_edit: bool  # whether ``person`` may accept an edited version (the policy: never where two approve)
    why_not: str  # why ``person`` may not accept, when they may not


def two_person_state(proposal: Proposal, person: object) -> TwoPersonState | None:
    """The two-person rule's state of the pending ``proposal`` for ``person``,
    or None where one approval makes it true. Reads only: the same questions
    ``_accept`` asks (the permission policy, then ``approval_refusal``), so a
    card offers Accept exactly when the click would count."""
    slug = space_of(proposal)
    required = space_access.required_approvals(slug)
    if required < 2:
        return None
    counted = approvals_of(proposal)
    done = {a.user_id for a in counted}
    waiting = [p.get_username() for p in policy.approvers(slug) if p.pk not in done and not proposes(proposal, p)]  # type: ignore[attr-defined]
    slugs, sources = policy_slugs(proposal)
    answer = policy.ask(person, "accept", slugs, sources)
    why = ""
    if answer.outcome not in (policy.Outcome.ALLOWED, policy.Outcome.COUNTED):
        why = f"You do not decide in {answer.slug or slug}."
    else:
        why = approval_refusal(proposal, person, counted, required, slug) or ""
    edit_verb = "correct" if proposal.action == ProposalAction.DISPUTE else "accept_edited"
    may_edit = policy.ask(person, edit_verb, slugs, sources).outcome == policy.Outcome.ALLOWED
    return TwoPersonState(
        required=required,
        approved_by=[a.user.get_username() for a in counted],
        waiting_for=waiting,
        may_accept=not why,
        may_edit=may_edit,
        why_not=why,
    )
