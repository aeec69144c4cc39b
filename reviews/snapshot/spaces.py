"""Spaces in a ``vetted-export`` document: each exported space
with its kind, name, approval rule and members (username and role).

A full export carries every space; a one-space export (``--space acme``)
carries only that space and only its own members, so it names no other
person. An import creates each space of the file that this instance lacks,
with its members (accounts it lacks are made inactive, like every other
username in the file). A space that exists here gains the file's members it
lacks, and an agent that exists here the file's grants it lacks; nothing is
removed or changed: a different kind, approval rule or role is a conflict
that refuses the whole import (merge_problems, grant_problems). The key
is optional: a file written before spaces has none, and then its spaces
must exist here already (``manage.py space create``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from reviews.models import Agent
from reviews.space_models import MAX_APPROVALS, ROLES, Membership, Role, Space, SpaceKind

from .format import SnapshotInvalid, parse_dt

SPACE_FIELDS = ["slug", "kind", "name", "required_approvals", "created_at", "members"]
MEMBER_FIELDS = ["user", "role"]


def export_spaces(slugs: Iterable[str]) -> list[dict[str, Any]]:
    """The rows of the spaces ``slugs``, members by username, in slug order."""
    rows = []
    for space in Space.objects.filter(slug__in=list(slugs)).order_by("slug"):
        members = (
            Membership.objects.filter(space=space).order_by("user__username").values_list("user__username", "role")
        )
        rows.append(
            {
                "slug": space.slug,
                "kind": space.kind,
                "name": space.name,
                "required_approvals": space.required_approvals,
                "created_at": space.created_at.isoformat(),
                "members": [{"user": user, "role": role} for user, role in members],
            }
        )
    return rows


def check_spaces(data: dict[str, Any], add: Any) -> set[str]:
    """Check ``data["spaces"]`` (absent: none) with ``add(where, message)``;
    returns the slugs the file brings."""
    spaces = data.get("spaces", [])
    if not isinstance(spaces, list):
        add("spaces", "must be a list")
        return set()
    brought: set[str] = set()
    for i, row in enumerate(spaces):
        where = f"spaces[{i}]"
        if not isinstance(row, dict) or sorted(row) != sorted(SPACE_FIELDS):
            add(where, f"must be an object with exactly {', '.join(SPACE_FIELDS)}")
            continue
        if not isinstance(row["slug"], str) or not row["slug"]:
            add(where, "slug must be a non-empty string")
            continue
        where = f"space {row['slug']!r}"
        if row["kind"] not in SpaceKind.values:
            add(where, f"kind must be one of {', '.join(SpaceKind.values)}")
        if not isinstance(row["name"], str) or not 1 <= len(row["name"]) <= 100:
            add(where, "name must be 1-100 characters")
        if type(row["required_approvals"]) is not int or not 1 <= row["required_approvals"] <= MAX_APPROVALS:
            add(where, f"required_approvals must be 1 to {MAX_APPROVALS}")
        members = row["members"]
        if not isinstance(members, list) or not all(_member_ok(m) for m in members):
            add(where, f"members must be a list of {{user, role}} with role one of {', '.join(ROLES)}")
        elif row["kind"] == SpaceKind.PERSONAL and [m["role"] for m in members] != ["owner"]:
            add(where, "a personal space has exactly one member, its owner")
        try:
            parse_dt(row["created_at"]) if isinstance(row["created_at"], str) else int("x")
        except ValueError:
            add(where, f"created_at must be an ISO 8601 date-time, got {row['created_at']!r}")
        brought.add(row["slug"])
    return brought


def _member_ok(m: object) -> bool:
    return (
        isinstance(m, dict) and sorted(m) == sorted(MEMBER_FIELDS) and isinstance(m["user"], str) and m["role"] in ROLES
    )


def member_names(data: dict[str, Any]) -> set[str]:
    return {m["user"] for row in data.get("spaces", []) for m in row["members"]}


def write_spaces(
    data: dict[str, Any], user_pk: dict[str, int], importer: Any
) -> tuple[list[str], list[dict[str, str]]]:
    """Create the file's spaces this instance lacks, with their members, and
    add to the spaces it has the members they lack. Returns the slugs created
    and the members added (``{space, user, role}``); raises SnapshotInvalid
    with every conflict before writing a space. (The index partitions follow
    Space's post_save.)"""
    rows = data.get("spaces", [])
    here = {s.slug: s for s in Space.objects.select_for_update().filter(slug__in=[r["slug"] for r in rows])}
    problems: list[str] = []
    to_add: list[dict[str, str]] = []
    for row in rows:
        if row["slug"] in here:
            problems += merge_problems(row, here[row["slug"]], importer, to_add)
    if problems:
        raise SnapshotInvalid(problems)
    for m in to_add:
        Membership.objects.create(space=here[m["space"]], user_id=user_pk[m["user"]], role=m["role"])
    created = []
    for row in rows:
        if row["slug"] in here:
            continue
        space = Space.objects.create(
            slug=row["slug"],
            kind=row["kind"],
            name=row["name"],
            required_approvals=row["required_approvals"],
            created_at=parse_dt(row["created_at"]) or timezone.now(),
        )
        Membership.objects.bulk_create(
            Membership(space=space, user_id=user_pk[m["user"]], role=m["role"]) for m in row["members"]
        )
        created.append(space.slug)
    return created, to_add


def merge_problems(row: dict[str, Any], space: Space, importer: Any, to_add: list[dict[str, str]]) -> list[str]:
    """Why the file's ``row`` cannot merge into ``space`` (which exists here);
    appends to ``to_add`` the members it would add. The space's own name is
    kept. Only an owner of the space adds members, as with ``space add``."""
    where, slug = f"space {space.slug!r}", space.slug
    problems = []
    if row["kind"] != space.kind:
        problems.append(f"{where}: it is a {space.kind} space here and a {row['kind']} space in the file")
    if row["required_approvals"] != space.required_approvals:
        problems.append(
            f"{where}: it needs {space.required_approvals} approval(s) here and {row['required_approvals']} in "
            f"the file; an import does not change the rule: set the one you want first "
            f"(`manage.py space approvals {slug} N`, or in the file)"
        )
    roles = dict(Membership.objects.filter(space=space).values_list("user__username", "role"))
    missing = []
    for m in row["members"]:
        if m["user"] not in roles:
            missing.append(m)
        elif roles[m["user"]] != m["role"]:
            problems.append(
                f"{where}: {m['user']} is its {roles[m['user']]} here and its {m['role']} in the file; an import "
                "never changes a member's role: make them the same first"
            )
    if missing and space.kind == SpaceKind.PERSONAL:
        owner, theirs = next(iter(roles), "no one"), ", ".join(m["user"] for m in missing)
        problems.append(
            f"{where}: a personal space has one member, its owner: {owner} here, {theirs} in the file "
            "(import into an instance whose first account has the file's username)"
        )
    elif missing and roles.get(importer.get_username()) != Role.OWNER:
        names = ", ".join(m["user"] for m in missing)
        problems.append(
            f"{where}: the file adds {names}, and only an owner of {slug} adds members; "
            f"{importer.get_username()} is not one (import with --reviewer AN-OWNER, or add them first)"
        )
    to_add += [{"space": slug, "user": m["user"], "role": m["role"]} for m in missing]
    return problems


def grant_problems(agent: Agent, row: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The file's grants (``row["spaces"]``) that ``agent``, which exists
    here, lacks, and why they cannot be added. Only the same person's agent
    gains grants, and only of spaces that person is a member of here (after
    the members merged). The tokenless ``import`` agent follows the spaces."""
    missing = sorted(set(row["spaces"]) - set(agent.spaces))
    if not missing or agent.name == "import":
        return [], []
    where = f"agent {agent.name!r}"
    here, there = (agent.owner.get_username() if agent.owner else None), row.get("owner")
    if here is None or here != there:
        return [], [
            f"{where}: the file grants it {', '.join(missing)}; it is {_whose(here)} here and {_whose(there)} in "
            "the file, and an import adds grants only to the same person's agent (grant them here first with "
            f"`manage.py space grant {agent.name} SLUG`, or take them out of the file)"
        ]
    member_of = set(
        Membership.objects.filter(user=agent.owner, space__slug__in=missing).values_list("space__slug", flat=True)
    )
    outside = [s for s in missing if s not in member_of]
    if outside:
        return [], [f"{where}: the file grants it {', '.join(outside)}, and {here} is not a member of it here"]
    return missing, []


def _whose(username: str | None) -> str:
    return f"{username}'s" if username else "no one's"
