"""The write log's old key names. ``AuditEvent`` rows are append-only, so an
event written before the space was called ``space`` keeps the keys it was
written with (``scope``, ``scopes``, ``from_scope``, ``to_scope``) in its
``extra``. A reader that decides who may see an event from those keys must
read both names, or an old event would be shown to (or hidden from) the wrong
people; it asks here."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

# Today's key -> the key events written before the rename carry.
OLD_KEY = {"space": "scope", "spaces": "scopes", "from_space": "from_scope", "to_space": "to_scope"}


def value(extra: Any, key: str) -> Any:
    """``extra[key]``, or the old key's value in an event written before the rename; None if neither."""
    if not isinstance(extra, dict):
        return None
    if key in extra:
        return extra[key]
    return extra.get(OLD_KEY.get(key, key))


def named_in(key: str, slugs: Any) -> Q:
    """Events whose ``extra[key]`` (under either name) is one of ``slugs``."""
    return Q(**{f"extra__{key}__in": slugs}) | Q(**{f"extra__{OLD_KEY[key]}__in": slugs})
