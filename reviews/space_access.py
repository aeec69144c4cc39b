"""Who may do what in which space: the one rule.

A person's role in a space is their Membership's: owner and reviewer decide
(accept, reject, act on records), a reader sees records and the write log
and decides nothing, anyone else does not see the space at all (it does not
exist for them: the same 404 as an unknown id). Nothing here writes; pages
read these to narrow what they show. Whether a person may *change*
something is the permission policy's answer (reviews/policy.py), which
every action asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet

from .space_models import DECIDING_ROLES, Membership, Role, Space

_KIND_ORDER = {"personal": 0, "team": 1, "system": 2}


def _ordered(rows: Iterable[tuple[str, str]]) -> list[str]:
    """Slugs in the order spaces are shown: personal, team, system (as the
    fixed spaces were), then by slug."""
    return [slug for kind, slug in sorted(rows, key=lambda r: (_KIND_ORDER.get(r[0], 9), r[1]))]


def role_of(user: object, slug: str) -> str | None:
    """``user``'s role in the space ``slug``, or None (not a member; no such space)."""
    if getattr(user, "pk", None) is None or not getattr(user, "is_active", False):
        return None
    return Membership.objects.filter(user_id=user.pk, space__slug=slug).values_list("role", flat=True).first()  # type: ignore[attr-defined]


def readable_spaces(user: object) -> list[str]:
    """Slugs of the spaces ``user`` sees (any role), in display order."""
    if getattr(user, "pk", None) is None or not getattr(user, "is_active", False):
        return []
    return _ordered(Membership.objects.filter(user_id=user.pk).values_list("space__kind", "space__slug"))  # type: ignore[attr-defined]


def deciding_spaces(user: object) -> list[str]:
    """Slugs of the spaces in which ``user`` decides (owner or reviewer), in display order."""
    if getattr(user, "pk", None) is None or not getattr(user, "is_active", False):
        return []
    rows = Membership.objects.filter(user_id=user.pk, role__in=list(DECIDING_ROLES))  # type: ignore[attr-defined]
    return _ordered(rows.values_list("space__kind", "space__slug"))


def spaces_and_deciding(user: object) -> tuple[list[str], list[str]]:
    """(readable_spaces, deciding_spaces) of ``user`` in one query."""
    if getattr(user, "pk", None) is None or not getattr(user, "is_active", False):
        return [], []
    rows = list(Membership.objects.filter(user_id=user.pk).values_list("space__kind", "space__slug", "role"))  # type: ignore[attr-defined]
    readable = _ordered((kind, slug) for kind, slug, _role in rows)
    deciding = _ordered((kind, slug) for kind, slug, role in rows if role in DECIDING_ROLES)
    return readable, deciding


def owned_spaces(user: object) -> list[str]:
    if getattr(user, "pk", None) is None or not getattr(user, "is_active", False):
        return []
    rows = Membership.objects.filter(user_id=user.pk, role=Role.OWNER)  # type: ignore[attr-defined]
    return _ordered(rows.values_list("space__kind", "space__slug"))


def proposals_in(slugs: Iterable[str], *, prefix: str = "") -> Q:
    """Proposals whose space is one of ``slugs``: a create or revise carries
    its space in ``space``; a retire or dispute has none and is in its
    target's space. ``prefix`` reaches them through a relation ("proposals__")."""
    slugs = list(slugs)
    return Q(**{f"{prefix}space__in": slugs}) | Q(**{f"{prefix}space": "", f"{prefix}target__space__in": slugs})


def sees_agent(user: object, agent: object, owned: Iterable[str] | None = None) -> bool:
    """Whether ``user`` is shown (and may revoke) ``agent``: their own agent,
    or one granted a space they own (an owner answers for who reads their
    space). Not a reviewer's or reader's view of others' agents: an agent's
    name, tool and grants tell of its person's other work. ``owned``: the
    user's owned slugs, when the caller has them already."""
    if getattr(user, "pk", None) is None or not getattr(user, "is_active", False):
        return False
    if getattr(agent, "owner_id", None) == user.pk:  # type: ignore[attr-defined]
        return True
    mine = set(owned_spaces(user) if owned is None else owned)
    return bool(mine & set(getattr(agent, "spaces", None) or []))


def agents_seen_by(user: object, queryset: QuerySet[Any] | None = None) -> QuerySet[Any]:
    """``queryset`` of agents (default: all) narrowed to those ``user`` is
    shown, the rule of ``sees_agent`` in SQL: their own, or one granted a
    space they own. A grant list is JSON, and neither SQLite nor every engine
    has a JSON-array "contains"; a slug never holds a quote, so the quoted
    slug in the list's text is exactly one of its elements."""
    from .models import Agent

    rows = Agent.objects.all() if queryset is None else queryset
    if getattr(user, "pk", None) is None or not getattr(user, "is_active", False):
        return rows.none()
    rule = Q(owner_id=user.pk)  # type: ignore[attr-defined]
    for slug in owned_spaces(user):
        rule |= Q(spaces__icontains=f'"{slug}"')
    return rows.filter(rule)


def space_of(obj: object) -> str:
    """The space of a proposal or record (a retire or dispute proposal
    carries none: it is in its target's)."""
    space = getattr(obj, "space", "")
    target = getattr(obj, "target", None) if not space else None
    return target.space if target is not None else space


def space_slugs() -> list[str]:
    """Every space's slug, in display order."""
    return _ordered(Space.objects.values_list("kind", "slug"))


def _required(kind: str, required: int) -> int:
    return 1 if kind == "personal" else max(1, required)


def required_approvals(slug: str) -> int:
    """How many different reviewers must accept a proposal in ``slug`` (personal: always 1)."""
    row = Space.objects.filter(slug=slug).values_list("kind", "required_approvals").first()
    return 1 if row is None else _required(*row)


def approval_rules() -> dict[str, int]:
    """``required_approvals`` of every space at once (slug -> count), for a
    page that shows many cards (one query instead of one per card)."""
    return {
        slug: _required(kind, required)
        for slug, kind, required in Space.objects.values_list("slug", "kind", "required_approvals")
    }
