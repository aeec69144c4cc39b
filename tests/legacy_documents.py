"""Export documents as versions 1 and 2 wrote them, with the old name for the
space (``scope``): what a file made before the rename looks like, built from
a document with today's names."""

from __future__ import annotations

import copy


def _renamed(row: dict, old: str, new: str) -> dict:
    return {new if key == old else key: value for key, value in row.items()}


def as_old_version(document: dict, version: int) -> dict:
    """``document`` (today's names) as a version ``version`` (1 or 2) file said it."""
    assert version in (1, 2)
    old = _renamed(copy.deepcopy(document), "space_slugs", "scopes")
    old["version"] = version
    old["records"] = [_renamed(row, "space", "scope") for row in old["records"]]
    for row in old["records"]:
        if version == 1:
            row.pop("approved_content", None)
        elif isinstance(row.get("approved_content"), dict):
            row["approved_content"] = _renamed(row["approved_content"], "space", "scope")
    old["proposals"] = [_renamed(row, "space", "scope") for row in old["proposals"]]
    old["agents"] = [_renamed(row, "spaces", "scopes") for row in old["agents"]]
    return old


def with_todays_names(content: dict) -> dict:
    """An old file's approved_content as Vetted keeps it now."""
    return _renamed(content, "scope", "space")
