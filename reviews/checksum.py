"""The canonical form of a record's approved content and its SHA-256.

Canonical form, version 1 (documented in docs/records.md; changing it would void
every stored checksum, so a new form must get a new version number):

    UTF-8 bytes of the compact JSON object
        {"body": B, "kind": K, "scope": S, "tags": T, "title": X, "v": 1}
    with keys sorted, separators "," and ":", non-ASCII kept as is, where
    - every string is Unicode NFC and line endings are "\\n";
    - T is the list of tags sorted (tag order carries no meaning).

Any change to kind, space, title, body or tags changes the checksum; nothing
else (dates, provenance, counters) is part of it.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

CANONICAL_VERSION = 1
# The fields the checksum covers: also exactly the keys of a record's kept
# ``approved_content``.
CHECKSUM_FIELDS = ("kind", "space", "title", "body", "tags")


def _text(value: str) -> str:
    return unicodedata.normalize("NFC", value.replace("\r\n", "\n").replace("\r", "\n"))


def canonical_bytes(*, kind: str, space: str, title: str, body: str, tags: Iterable[str]) -> bytes:
    document = {
        "v": CANONICAL_VERSION,
        "kind": _text(kind),
        "scope": _text(space),
        "title": _text(title),
        "body": _text(body),
        "tags": sorted(_text(tag) for tag in tags),
    }
    return json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def content_checksum(*, kind: str, space: str, title: str, body: str, tags: Iterable[str]) -> str:
    """Hex SHA-256 of the canonical form."""
    return hashlib.sha256(canonical_bytes(kind=kind, space=space, title=title, body=body, tags=tags)).hexdigest()


def checksum_of(content: Mapping[str, Any]) -> str:
    """content_checksum of a mapping holding (at least) the CHECKSUM_FIELDS."""
    return content_checksum(**{name: content[name] for name in CHECKSUM_FIELDS})


def approved_copy(content: Mapping[str, Any], approved_checksum: str) -> dict[str, Any] | None:
    """What to keep as a record's ``approved_content`` when all that is known
    is its current ``content`` and its ``approved_checksum`` (a migration, an
    old export): a copy of exactly the CHECKSUM_FIELDS if they still match the
    checksum, else None. Text edited since approval cannot be told apart from
    the approved text it replaced, so nothing is kept rather than a guess."""
    copy = {name: content[name] for name in CHECKSUM_FIELDS}
    copy["tags"] = list(copy["tags"] or [])
    return copy if checksum_of(copy) == approved_checksum else None


def is_approved_copy(value: object, approved_checksum: str) -> bool:
    """``value`` has the shape of an approved_content and matches the checksum."""
    if not isinstance(value, Mapping) or set(value) != set(CHECKSUM_FIELDS):
        return False
    if not all(isinstance(value[name], str) for name in CHECKSUM_FIELDS if name != "tags"):
        return False
    tags = value["tags"]
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        return False
    return checksum_of(value) == approved_checksum
