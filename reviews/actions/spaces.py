"""Spaces, their members and agents' grants, one action each.

Who may manage a space: its owners, and the machine's operator through
``manage.py space`` (a SystemActor). A personal space has exactly one
member, its owner, and needs one approval. An agent's grants are spaces its
person (``Agent.owner``) is a member of; removing a member takes the grants
of that space from their agents in the same transaction.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from .. import policy, space_access
from ..errors import InvalidTransition, NotFound, ValidationFailed
from ..models import Agent, SubjectType
from ..space_models import (
    MAX_APPROVALS,
    PERSONAL_SLUG,
    RESERVED_SLUGS,
    ROLES,
    SLUG_MAX,
    TEAM_SLUG,
    Membership,
    Role,
    Space,
    SpaceKind,
    personal_slug,
)
from ._common import Actor, SystemActor, audit, locked_agent


def _subject(space: Space) -> tuple[str, str]:
    return (SubjectType.SPACE, space.slug)


def locked_space(slug: Space | str) -> Space:
    slug = slug if isinstance(slug, str) else slug.slug
    try:
        return Space.objects.select_for_update().get(slug=slug)
    except Space.DoesNotExist:
        raise NotFound(f"No space {slug!r}.") from None


def _user(username: AbstractBaseUser | str) -> Any:
    if isinstance(username, AbstractBaseUser):
        return username
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise NotFound(f"No account named {username!r}.") from None


def require_manager(actor: Actor, space: Space) -> None:
    """The operator (SystemActor) or an owner of ``space`` (the policy's
    ``manage`` rule). Anyone else gets NotFound for a space they are not a
    member of: it does not exist for them."""
    if isinstance(actor, SystemActor):
        return
    answer = policy.ask(actor, "manage", [space.slug])
    if answer.outcome == policy.Outcome.ALLOWED:
        return
    if answer.outcome == policy.Outcome.ACCOUNT:
        raise InvalidTransition("Only an active reviewer (staff) account or the operator manages a space.")
    if answer.outcome == policy.Outcome.NOT_FOUND:
        raise NotFound(f"No space {space.slug!r}.")
    raise InvalidTransition(
        f"Only an owner of {space.slug!r} manages its members; you are its {answer.standing.value}."
    )


def _require_livable(space: Space, *, required: int, changed: tuple[int, str | None] | None = None) -> None:
    """Refuse a change that would leave a space needing two approvals with
    fewer than two people who could approve (reviews/policy.unlivable)."""
    problem = policy.unlivable(space.slug, required=required, changed=changed)
    if problem:
        raise InvalidTransition(f"Refused: {problem}.")


def create_space(
    slug: str,
    *,
    kind: str,
    name: str,
    actor: Actor,
    owner: AbstractBaseUser | str | None = None,
    required_approvals: int = 1,
) -> Space:
    """Create a space. A team space gets ``owner`` (default: the acting
    person) as its owner; a personal space is ``personal:<username>`` of its
    one owner. ``required_approvals`` is 1 or 2 (personal: 1)."""
    with transaction.atomic():
        if not isinstance(actor, SystemActor) and not (
            isinstance(actor, get_user_model()) and actor.is_active and actor.is_staff
        ):
            raise InvalidTransition("Spaces are created by a reviewer (staff) account or `manage.py space create`.")
        person = _user(owner) if owner is not None else (actor if not isinstance(actor, SystemActor) else None)
        slug = str(slug or "").strip().lower()
        errors: dict[str, str] = {}
        if kind not in (SpaceKind.PERSONAL, SpaceKind.TEAM):
            errors["kind"] = "personal or team (there is one system space)"
        if person is None:
            errors["owner"] = "a space needs an owner: give one (an account name)"
        elif kind == SpaceKind.PERSONAL:
            slug = slug or personal_slug(person.get_username())
            expected = personal_slug(person.get_username())
            if slug != expected or not PERSONAL_SLUG.fullmatch(slug):
                errors["slug"] = f"a personal space is personal:<its owner's username>, here {expected!r}"
            required_approvals = 1
        elif kind == SpaceKind.TEAM and (slug in RESERVED_SLUGS or not TEAM_SLUG.fullmatch(slug)):
            errors["slug"] = (
                f"1-{min(SLUG_MAX, 40)} lower-case letters, digits and inner hyphens (e.g. acme, north-rail), "
                f"not {', '.join(sorted(RESERVED_SLUGS))}"
            )
        if required_approvals not in range(1, MAX_APPROVALS + 1):
            errors["required_approvals"] = f"1 or {MAX_APPROVALS}"
        name = str(name or "").strip()
        if not name or len(name) > 100:
            errors["name"] = "1-100 characters"
        if not errors and Space.objects.filter(slug=slug).exists():
            errors["slug"] = f"a space {slug!r} already exists"
        if errors:
            raise ValidationFailed(errors)
        if required_approvals >= 2:
            # A new space has one member: nobody else could give a second approval.
            raise InvalidTransition(
                f"Refused: {slug} would need two approvals with one person who could approve there (its owner); "
                f"create it with one approval, add reviewers, then set two (`space approvals {slug} 2`)."
            )
        space = Space.objects.create(slug=slug, kind=kind, name=name, required_approvals=required_approvals)
        assert person is not None
        Membership.objects.create(space=space, user=person, role=Role.OWNER)
        audit(
            "space.created",
            actor=actor,
            subject=_subject(space),
            snippet=name,
            extra={
                "kind": kind,
                "members": {person.get_username(): Role.OWNER},
                "required_approvals": required_approvals,
            },
        )
        return space


def add_member(space: Space | str, username: AbstractBaseUser | str, *, role: str, actor: Actor) -> Membership:
    """Make ``username`` a member of ``space`` with ``role`` (owner, reviewer,
    reader), or change the role of a member. A personal space has only its owner."""
    with transaction.atomic():
        space = locked_space(space)
        require_manager(actor, space)
        if role not in ROLES:
            raise ValidationFailed({"role": f"got {role!r}; one of {', '.join(ROLES)}"})
        user = _user(username)
        if space.kind == SpaceKind.PERSONAL:
            raise InvalidTransition(f"{space.slug} is a personal space: its one member is its owner.")
        membership = Membership.objects.filter(space=space, user=user).first()
        before = membership.role if membership else ""
        if membership is not None and membership.role == role:
            raise InvalidTransition(f"{user.get_username()} is already a {role} of {space.slug}.")
        if membership is not None and before == Role.OWNER and not _other_owner(space, user):
            raise InvalidTransition(
                f"{user.get_username()} is the last owner of {space.slug}; add another owner first."
            )
        if membership is not None:
            _require_livable(space, required=space.required_approvals, changed=(user.pk, role))
        if membership is None:
            membership = Membership.objects.create(space=space, user=user, role=role)
        else:
            membership.role = role
            membership.save(update_fields=["role"])
        audit(
            "space.member_added" if not before else "space.role_changed",
            actor=actor,
            subject=_subject(space),
            snippet=user.get_username(),
            extra={"member": user.get_username(), "role": role, **({"previous_role": before} if before else {})},
        )
        return membership


def _other_owner(space: Space, user: Any) -> bool:
    return Membership.objects.filter(space=space, role=Role.OWNER).exclude(user=user).exists()


def remove_member(space: Space | str, username: AbstractBaseUser | str, *, actor: Actor) -> list[str]:
    """Remove a member; their agents lose their grants of this space in the
    same transaction (returned: the agents' names). The last owner stays."""
    with transaction.atomic():
        space = locked_space(space)
        require_manager(actor, space)
        user = _user(username)
        membership = Membership.objects.filter(space=space, user=user).first()
        if membership is None:
            raise NotFound(f"{user.get_username()} is not a member of {space.slug}.")
        if membership.role == Role.OWNER and not _other_owner(space, user):
            raise InvalidTransition(
                f"{user.get_username()} is the last owner of {space.slug}; add another owner first."
            )
        _require_livable(space, required=space.required_approvals, changed=(user.pk, None))
        membership.delete()
        narrowed = []
        for agent in Agent.objects.select_for_update().filter(owner=user).order_by("name"):
            if space.slug in agent.spaces:
                agent.spaces = [s for s in agent.spaces if s != space.slug]
                agent.save(update_fields=["spaces"])
                narrowed.append(agent.name)
        audit(
            "space.member_removed",
            actor=actor,
            subject=_subject(space),
            snippet=user.get_username(),
            extra={"member": user.get_username(), "role": membership.role, "grants_removed": narrowed},
        )
        return narrowed


def set_required_approvals(space: Space | str, count: int, *, actor: Actor) -> Space:
    """How many different reviewers must accept a proposal in a team or the system space (1 or 2)."""
    with transaction.atomic():
        space = locked_space(space)
        require_manager(actor, space)
        if space.kind == SpaceKind.PERSONAL:
            raise InvalidTransition(f"{space.slug} is a personal space: one approval, its owner's.")
        if count not in range(1, MAX_APPROVALS + 1):
            raise ValidationFailed({"required_approvals": f"got {count!r}; 1 or {MAX_APPROVALS}"})
        _require_livable(space, required=count)
        before = space.required_approvals
        space.required_approvals = count
        space.save(update_fields=["required_approvals"])
        audit(
            "space.approvals_set",
            actor=actor,
            subject=_subject(space),
            snippet=space.slug,
            extra={"required_approvals": count, "previous": before},
        )
        return space


def check_grants(owner: Any, slugs: list[str]) -> str | None:
    """Why ``owner``'s agent may not be granted ``slugs``, or None."""
    if owner is None:
        return "the agent has no person to grant spaces of"
    member_of = space_access.readable_spaces(owner)
    allowed = ", ".join(member_of) or "none"
    bad = [s for s in slugs if s not in member_of]
    if not slugs or bad:
        why = f"{', '.join(bad)}: not a space {owner.get_username()} is a member of" if bad else "none"
        return f"got {why}; choose one or more of: {allowed}"
    for slug in slugs:
        # A proposal of an agent is never approved by its person: in a space
        # that needs two approvals, two others must be able to approve it.
        problem = policy.unlivable(slug, required=policy.required_approvals(slug), new_agent_of=owner.pk)
        if problem:
            return problem
    return None


def grant_space(agent: Agent | str, slug: str, *, actor: Actor) -> Agent:
    """Grant an agent a space of its person's (read, propose)."""
    return _change_grant(agent, slug, actor=actor, grant=True)


def revoke_space(agent: Agent | str, slug: str, *, actor: Actor) -> Agent:
    """Take a space from an agent's grants (it keeps at least one)."""
    return _change_grant(agent, slug, actor=actor, grant=False)


def _change_grant(agent: Agent | str, slug: str, *, actor: Actor, grant: bool) -> Agent:
    with transaction.atomic():
        agent = locked_agent(agent)
        if not isinstance(actor, SystemActor):
            person = actor if isinstance(actor, get_user_model()) else None
            if person is None or agent.owner_id != person.pk:
                raise InvalidTransition(
                    f"Only the person of agent {agent.name!r} (or the operator) changes its grants."
                )
        if grant:
            if slug in agent.spaces:
                raise InvalidTransition(f"Agent {agent.name!r} already has {slug}.")
            problem = check_grants(agent.owner, [slug])
            if problem:
                raise ValidationFailed({"space": problem})
            agent.spaces = sorted([*agent.spaces, slug])
        else:
            if slug not in agent.spaces:
                raise InvalidTransition(f"Agent {agent.name!r} is not granted {slug}.")
            if len(agent.spaces) == 1:
                raise InvalidTransition(f"{slug} is agent {agent.name!r}'s only space; revoke the agent instead.")
            agent.spaces = [s for s in agent.spaces if s != slug]
        agent.save(update_fields=["spaces"])
        audit(
            "agent.granted" if grant else "agent.grant_revoked",
            actor=actor,
            subject=agent,
            snippet=agent.name,
            extra={"space": slug, "grants": list(agent.spaces)},
        )
        return agent


@transaction.atomic  # its own, or a savepoint in the caller's (PostgreSQL locks only inside one)
def claim_unowned_spaces(user: Any, *, actor: Actor) -> list[str]:
    """First run: the first reviewer becomes owner of every space that has no
    member yet (a fresh install's personal, team and system spaces). Atomic
    (within the caller's transaction when there is one); audited per space."""
    claimed = []
    # of=("self",): PostgreSQL cannot lock the nullable side of the outer join.
    for space in Space.objects.select_for_update(of=("self",)).filter(memberships__isnull=True).order_by("slug"):
        Membership.objects.create(space=space, user=user, role=Role.OWNER)
        if space.kind == SpaceKind.PERSONAL and space.name == "Personal":
            space.name = f"Personal ({user.get_username()})"
            space.save(update_fields=["name"])
        audit(
            "space.member_added",
            actor=actor,
            subject=_subject(space),
            snippet=user.get_username(),
            extra={"member": user.get_username(), "role": Role.OWNER, "first_run": True},
        )
        claimed.append(space.slug)
    return claimed
