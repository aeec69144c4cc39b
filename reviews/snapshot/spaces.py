"""Spaces in a ``vetted-export`` document (issue 16): each exported space
with its kind, name, approval rule and members (username and role).

A full export carries every space; a one-space export (``--space acme``)
carries only that space and only its own members, so it names no other
person. An import creates each space of the file that this instance lacks,
with its members (accounts it lacks are made inactive, like every other
username in the file); a space that exists here is kept as it is. The key
is optional: a file written before spaces has none, and then its spaces
must exist here already (``manage.py space create``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from reviews.space_models import MAX_APPROVALS, ROLES, Membership, Space, SpaceKind

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
    from .check import _parse_dt

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
            _parse_dt(row["created_at"]) if isinstance(row["created_at"], str) else int("x")
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


def write_spaces(data: dict[str, Any], user_pk: dict[str, int]) -> list[str]:
    """Create the file's spaces this instance lacks, with their members; the
    slugs created. (The index partitions follow Space's post_save.)"""
    from .check import _parse_dt

    created = []
    for row in data.get("spaces", []):
        if Space.objects.filter(slug=row["slug"]).exists():
            continue
        space = Space.objects.create(
            slug=row["slug"],
            kind=row["kind"],
            name=row["name"],
            required_approvals=row["required_approvals"],
            created_at=_parse_dt(row["created_at"]) or timezone.now(),
        )
        Membership.objects.bulk_create(
            Membership(space=space, user_id=user_pk[m["user"]], role=m["role"]) for m in row["members"]
        )
        created.append(space.slug)
    return created
