"""Markdown notes and export folders written before the space was called
``space``: their front matter says ``scope: team`` and a folder's manifest
``{"scope": "team"}``. They still import (and an export still recognises a
folder it wrote then): a note's or a manifest's space is its ``space``, or
else the old ``scope``. A note that gives both is read by ``space``, today's
name, the one every current export writes."""

from __future__ import annotations

from typing import Any

OLD_KEY = "scope"


def space_of(mapping: Any) -> Any:
    """The space a front matter or a manifest names (None if none)."""
    if not isinstance(mapping, dict):
        return None
    value = mapping.get("space")
    return value if value not in (None, "") else mapping.get(OLD_KEY)
