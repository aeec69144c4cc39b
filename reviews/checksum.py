"""The canonical form of a record's approved content and its SHA-256.

Canonical form, version 1 (documented in the README; changing it would void
every stored checksum, so a new form must get a new version number):

    UTF-8 bytes of the compact JSON object
        {"body": B, "kind": K, "scope": S, "tags": T, "title": X, "v": 1}
    with keys sorted, separators "," and ":", non-ASCII kept as is, where
    - every string is Unicode NFC and line endings are "\\n";
    - T is the list of tags sorted (tag order carries no meaning).

Any change to kind, scope, title, body or tags changes the checksum; nothing
else (dates, provenance, counters) is part of it.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable

CANONICAL_VERSION = 1


def _text(value: str) -> str:
    return unicodedata.normalize("NFC", value.replace("\r\n", "\n").replace("\r", "\n"))


def canonical_bytes(*, kind: str, scope: str, title: str, body: str, tags: Iterable[str]) -> bytes:
    document = {
        "v": CANONICAL_VERSION,
        "kind": _text(kind),
        "scope": _text(scope),
        "title": _text(title),
        "body": _text(body),
        "tags": sorted(_text(tag) for tag in tags),
    }
    return json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def content_checksum(*, kind: str, scope: str, title: str, body: str, tags: Iterable[str]) -> str:
    """Hex SHA-256 of the canonical form."""
    return hashlib.sha256(canonical_bytes(kind=kind, scope=scope, title=title, body=body, tags=tags)).hexdigest()
