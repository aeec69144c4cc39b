"""Who may change what, in every space a change touches: the one permission policy.

Every state change a person makes asks ``require`` here, naming the verb
(a row of ``RULES``) and every space the change reads from or writes to.
The answer depends on two things only:

- the person's *standing* in each of those spaces (``standing``): owner,
  reviewer, reader, none (not a member, or no such space: the two answer
  alike), or an account that may not decide at all (deactivated, or not a
  staff account). A superuser who is not a member of a space has no role in
  it: superuser status opens the admin and account changes, never a space;
- each space's approval rule (``required_approvals``: 1, or 2 for the
  two-person rule).

``outcome`` is the pure function of those: the actions call it through
``require``, ``docs/security-permissions.md`` is rendered from ``RULES`` by
``policy_table.table_markdown``, and the generated matrix test reads each cell's
expected result from it. The refusal texts name only what the person could
already see: a space they do not belong to does not exist for them.

Domain layer: reads the membership tables, writes nothing, imports no interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from . import space_access
from .space_models import DECIDING_ROLES, Membership, Role


class Standing(StrEnum):
    """A person's standing in one space."""

    OWNER = "owner"
    REVIEWER = "reviewer"
    READER = "reader"
    NONE = "none"  # not a member (a superuser included), or no such space
    INACTIVE = "inactive"  # deactivated, or not a staff account: decides nowhere


class Need(StrEnum):
    """What a rule asks of the person in one of the spaces it touches."""

    SEE = "see"  # any role (a reader included)
    DECIDE = "decide"  # owner or reviewer
    OWN = "own"  # owner


class TwoPerson(StrEnum):
    """What the two-person rule does to a change in a space that needs two approvals."""

    NONE = "none"  # approves nothing and removes no approved text
    COUNTED = "counted"  # this approval is counted: the first is recorded, the second makes it true
    REFUSED = "refused"  # one person's change would take effect alone: refused there


class Outcome(StrEnum):
    ALLOWED = "allowed"
    COUNTED = "counted"  # allowed as one of two approvals: the first is recorded, the second makes it true
    NOT_FOUND = "not found"  # the same answer as an unknown id
    NOT_DECIDING = "refused: reader"
    NOT_OWNER = "refused: not an owner"
    ACCOUNT = "refused: account"  # deactivated or not staff: refused before any space is read
    TWO_PERSON = "refused: two approvals"


@dataclass(frozen=True)
class Part:
    """One space a rule touches: its part in the change and what the person needs there."""

    part: str  # "source", "destination", "target", "duplicate", "every"
    need: Need
    two_person: bool = True  # whether this space's approval rule applies to the change


@dataclass(frozen=True)
class Rule:
    verb: str
    label: str
    spaces: tuple[Part, ...]
    two_person: TwoPerson
    via: str  # the entry points that reach it (all through one action)
    why: str  # the reason for the two-person column, for the docs


_SRC = Part("source", Need.DECIDE)

RULES: dict[str, Rule] = {
    r.verb: r
    for r in (
        Rule(
            "accept",
            "accept a proposal as proposed",
            (_SRC,),
            TwoPerson.COUNTED,
            "inbox card, bulk accept, triage, admin action, `review accept`, "
            "`import_records --approve`, `import_markdown --approve`",
            "makes text approved (or retires, for a retirement or upheld dispute): the first accept is recorded, "
            "the second by another person makes it true; the owner of the proposing agent never approves it",
        ),
        Rule(
            "accept_edited",
            "accept an edited version (the space is locked)",
            (_SRC,),
            TwoPerson.REFUSED,
            "inbox editor",
            "the other reviewer would approve text they never saw",
        ),
        Rule(
            "correct",
            "correct a disputed record (accept a dispute with edits)",
            (_SRC,),
            TwoPerson.REFUSED,
            "inbox dispute card, disputed worklist",
            "makes new text approved with one person's approval",
        ),
        Rule(
            "reject",
            "reject a proposal",
            (_SRC,),
            TwoPerson.NONE,
            "inbox card, bulk reject, admin action, `review reject`",
            "approves nothing: any reject rejects",
        ),
        Rule(
            "reject_duplicate",
            "reject as a duplicate of a record or proposal",
            (_SRC, Part("duplicate", Need.SEE, two_person=False)),
            TwoPerson.NONE,
            "inbox hint",
            "approves nothing; the duplicate must be one the person may see",
        ),
        Rule(
            "merge",
            "merge a create into a revision of a record",
            (_SRC, Part("target", Need.DECIDE, two_person=False)),
            TwoPerson.NONE,
            "inbox hint",
            "approves nothing: the revision waits for review (and its approvals) in the record's space",
        ),
        Rule(
            "revise",
            "revise a record directly",
            (_SRC,),
            TwoPerson.REFUSED,
            "record page, worklists",
            "makes new text approved with one person's approval",
        ),
        Rule(
            "approve_current",
            "approve the current text of a record changed outside Vetted",
            (_SRC,),
            TwoPerson.REFUSED,
            "record page, edited worklist, `review approve-current`",
            "makes text nobody approved approved with one person's approval",
        ),
        Rule(
            "restore",
            "restore a record's approved text",
            (_SRC,),
            TwoPerson.NONE,
            "record page, edited worklist, `review restore`",
            "puts back the text that was approved under the rule",
        ),
        Rule(
            "retire",
            "retire a record directly",
            (_SRC,),
            TwoPerson.REFUSED,
            "record page, worklists, admin action, `review retire`",
            "removes approved text with one person's approval",
        ),
        Rule(
            "keep",
            "keep a disputed record (reject its disputes)",
            (_SRC,),
            TwoPerson.NONE,
            "disputed worklist, record page, admin action, `review keep-record`",
            "rejects the disputes (any reject rejects); the text stays the one approved under the rule",
        ),
        Rule(
            "verify",
            "verify a record (a new review date)",
            (_SRC,),
            TwoPerson.NONE,
            "due worklist, record page, admin action, `review verify`",
            "changes no text",
        ),
        Rule(
            "move",
            "move a record to another space",
            (_SRC, Part("destination", Need.DECIDE)),
            TwoPerson.REFUSED,
            "record page, `review move`",
            "moving out removes approved text from the source, moving in makes text approved in the "
            "destination: refused if either needs two approvals",
        ),
        Rule(
            "undo",
            "undo one's own decision",
            (Part("every", Need.DECIDE, two_person=False),),
            TwoPerson.NONE,
            "recent decisions page, `review undo`",
            "returns to the state before the decision, which the rule already held (the first approval of a "
            "two-approval proposal stays recorded)",
        ),
        Rule(
            "manage",
            "manage a space's members and approval rule",
            (Part("source", Need.OWN, two_person=False),),
            TwoPerson.NONE,
            "`manage.py space` (the operator may always), space pages",
            "approves nothing; refused if it would leave fewer than two people who could approve",
        ),
    )
}


def _decides(standing: Standing) -> bool:
    return standing in (Standing.OWNER, Standing.REVIEWER)


def outcome(verb: str, standings: Sequence[Standing], required: Sequence[int], sources: int = 0) -> Outcome:
    """The answer for a person with ``standings`` in the spaces ``RULES[verb]``
    touches (in its order; the first part may span ``sources`` slugs: a record's
    current and approved space) whose approval rules are ``required``. Checked in this order, so
    a refusal never tells more than the person may know: the account, then
    each space's role (not a member: not found, before anything of that space
    is said), then the two-person rule."""
    rule = RULES[verb]
    if any(s == Standing.INACTIVE for s in standings):
        return Outcome.ACCOUNT
    parts = _parts(rule, len(standings), sources)
    needs = [part.need for part in parts]
    for standing, need in zip(standings, needs, strict=True):
        if standing == Standing.NONE:
            return Outcome.NOT_FOUND
        if need == Need.DECIDE and not _decides(standing):
            return Outcome.NOT_DECIDING
        if need == Need.OWN and standing != Standing.OWNER:
            return Outcome.NOT_OWNER
    counted = [r for r, part in zip(required, parts, strict=True) if part.two_person]
    if any(r >= 2 for r in counted):
        if rule.two_person == TwoPerson.REFUSED:
            return Outcome.TWO_PERSON
        if rule.two_person == TwoPerson.COUNTED:
            return Outcome.COUNTED
    return Outcome.ALLOWED


def _parts(rule: Rule, n: int, sources: int = 0) -> list[Part]:
    """The rule's parts for ``n`` slugs: the first ``sources`` slugs (default:
    as many as the rule leaves over) are its first part, the rest its others."""
    sources = sources or max(1, 1 + n - len(rule.spaces))
    return ([rule.spaces[0]] * sources + list(rule.spaces[1:]))[:n]


# --------------------------------------------------------------------------- reading the database


def standing(person: object, slug: str) -> Standing:
    """``person``'s standing in the space ``slug`` (an agent or a system actor: NONE)."""
    if getattr(person, "pk", None) is None or not hasattr(person, "is_staff"):
        return Standing.NONE
    if not getattr(person, "is_active", False) or not getattr(person, "is_staff", False):
        return Standing.INACTIVE
    role = Membership.objects.filter(user_id=person.pk, space__slug=slug).values_list("role", flat=True).first()  # type: ignore[attr-defined]
    return Standing(role) if role else Standing.NONE


def required_approvals(slug: str) -> int:
    """How many different people must approve in ``slug`` (personal: always 1)."""
    return space_access.required_approvals(slug)


def is_operator(person: object) -> bool:
    """A signed-in, active superuser: instance-wide things (/health's counts, test notices) are theirs."""
    return all(getattr(person, flag, False) for flag in ("is_authenticated", "is_active", "is_superuser"))


def sees(person: object, slug: str) -> bool:
    """Whether ``slug`` exists for ``person`` (any role)."""
    return standing(person, slug) in (Standing.OWNER, Standing.REVIEWER, Standing.READER)


@dataclass(frozen=True)
class Answer:
    outcome: Outcome
    slug: str = ""  # the space the answer is about (empty for ALLOWED)
    standing: Standing = Standing.NONE


def ask(person: object, verb: str, slugs: Sequence[str], sources: int = 0) -> Answer:
    """The policy's answer for ``person`` doing ``verb`` over ``slugs`` (in the
    rule's order, the first ``sources`` of them its first part; duplicates
    allowed), with the space a refusal is about."""
    standings = [standing(person, slug) for slug in slugs]
    required = [required_approvals(slug) for slug in slugs]
    result = outcome(verb, standings, required, sources)
    parts = _parts(RULES[verb], len(slugs), sources)
    slug, who = "", Standing.NONE
    if result in (Outcome.NOT_FOUND, Outcome.NOT_DECIDING, Outcome.NOT_OWNER):
        for s, st, need in zip(slugs, standings, [p.need for p in parts], strict=True):
            bad = (
                st == Standing.NONE
                or (need == Need.DECIDE and not _decides(st))
                or (need == Need.OWN and st != Standing.OWNER)
            )
            if bad:
                slug, who = s, st
                break
    elif result in (Outcome.TWO_PERSON, Outcome.COUNTED):
        slug = next(s for s, r, p in zip(slugs, required, parts, strict=True) if r >= 2 and p.two_person)
    return Answer(result, slug, who)


# --------------------------------------------------------------------------- the two-person rule, livable


def approvers(slug: str, *, changed: tuple[int, str | None] | None = None) -> list[object]:
    """The people who could approve in ``slug`` (active staff owners and
    reviewers), after ``changed`` = (user id, new role or None for removed)."""
    from django.contrib.auth import get_user_model

    rows = dict(Membership.objects.filter(space__slug=slug).values_list("user_id", "role"))
    if changed is not None:
        user_id, role = changed
        if role is None:
            rows.pop(user_id, None)
        else:
            rows[user_id] = role
    deciding = [uid for uid, role in rows.items() if role in DECIDING_ROLES]
    users = get_user_model().objects.filter(pk__in=deciding, is_active=True, is_staff=True).order_by("username")
    return list(users)


def unlivable(
    slug: str, *, required: int, changed: tuple[int, str | None] | None = None, new_agent_of: int | None = None
) -> str | None:
    """Why ``slug`` with ``required`` approvals (after ``changed``) would leave
    a proposal nobody could make true, or None. Two approvals need two people
    who could approve every proposal: two deciding members, and for each
    agent granted the space two besides the agent's person (who never
    approves its own agent's proposal)."""
    if required < 2:
        return None
    from .models import Agent

    people = approvers(slug, changed=changed)
    if len(people) < 2:
        return (
            f"{slug} needs two approvals, and this would leave {len(people)} person who could approve there "
            "(active owners and reviewers); add a reviewer first, or set one approval"
        )
    ids = {getattr(p, "pk", None) for p in people}
    granted: list[tuple[str, int | None]]
    if new_agent_of is not None:
        # A new grant is judged by its own agent: the others were judged when granted.
        granted = [("the new grant's agent", new_agent_of)]
    else:
        granted = [
            (agent.name, agent.owner_id)
            for agent in Agent.objects.filter(is_active=True, spaces__icontains=f'"{slug}"').order_by("name")
            if slug in agent.spaces
        ]
    for name, owner_id in granted:
        if owner_id in ids and len(ids - {owner_id}) < 2:
            shown = name if name.startswith("the ") else f"agent {name!r}"
            return (
                f"{slug} needs two approvals, and {shown}'s proposals there could be approved by only "
                f"{len(ids) - 1} person (its own person never approves them); add a reviewer first, or set one "
                "approval"
            )
    return None


__all__ = [
    "RULES",
    "Answer",
    "Need",
    "Outcome",
    "Role",
    "Rule",
    "Standing",
    "TwoPerson",
    "approvers",
    "ask",
    "outcome",
    "required_approvals",
    "sees",
    "standing",
    "unlivable",
]
