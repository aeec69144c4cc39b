"""Reading ``vetted-export`` files of versions 1 and 2, written before the
space was called ``space`` everywhere: they name it ``scope`` (a record's and
a proposal's field, the checksummed ``approved_content``, a proposal's
``reviewer_changes``), an agent's grants ``scopes``, and the exported slugs
top-level ``scopes``. ``upgrade`` gives the same document with today's names
(version 3), so the checks and the loader know one set of names; a version 3
file that still uses an old name is refused by the checks like any unknown
field. Audit rows are copied as they are: the write log is append-only, and
its readers take both names (reviews/legacy_events.py).
"""

from __future__ import annotations

import copy
from typing import Any

# The versions whose files use the old names.
OLD_NAME_VERSIONS = (1, 2)


def _renamed(row: Any, old: str, new: str) -> Any:
    """``row`` with its key ``old`` called ``new`` (in place of it, same position)."""
    if not isinstance(row, dict) or old not in row or new in row:
        return row
    return {new if key == old else key: value for key, value in row.items()}


def upgrade(data: Any) -> Any:
    """A version 1 or 2 document with today's names (a copy); anything else as given."""
    if not isinstance(data, dict) or data.get("version") not in OLD_NAME_VERSIONS:
        return data
    data = _renamed(copy.deepcopy(data), "scopes", "space_slugs")
    for key, old, new in (
        ("records", "scope", "space"),
        ("proposals", "scope", "space"),
        ("agents", "scopes", "spaces"),
    ):
        rows = data.get(key)
        if isinstance(rows, list):
            data[key] = [_renamed(row, old, new) for row in rows]
    for row in data.get("records") or []:
        if isinstance(row, dict) and "approved_content" in row:  # version 2 on
            row["approved_content"] = _renamed(row["approved_content"], "scope", "space")
    for row in data.get("proposals") or []:
        if isinstance(row, dict) and "reviewer_changes" in row:
            row["reviewer_changes"] = _renamed(row["reviewer_changes"], "scope", "space")
    return data
