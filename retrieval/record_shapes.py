"""The record shapes a reader receives (an agent over MCP and REST, and the
`records` command that shows what an agent would get): kept here, below the
gateway, so both use the one shape."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from reviews.formats import iso
from reviews.models import SPACES, Record

EXCERPT_CHARS = 280


def _heading(record: Record) -> dict[str, Any]:
    """What names a record in every shape (the summary and the full record)."""
    return {
        "id": record.public_id,
        "title": record.title,
        "kind": record.kind,
        "space": record.space,
        "tags": record.tags,
    }


def record_summary(record: Record) -> dict[str, Any]:
    body = record.body
    excerpt = body if len(body) <= EXCERPT_CHARS else body[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
    return {
        **_heading(record),
        "excerpt": excerpt,
        "approved_at": iso(record.approved_at),
        "verified_at": iso(record.verified_at),
        "review_by": iso(record.review_by),
    }


def record_full(record: Record, spaces: Collection[str] = SPACES) -> dict[str, Any]:
    """Every field an agent may see. Links to versions in spaces the reader
    cannot read (a record moved from personal to team) are left out."""
    supersedes = record.supersedes if record.supersedes_id else None
    return {
        **_heading(record),
        "body": record.body,
        "status": record.status,
        "approved_at": iso(record.approved_at),
        "approved_by": record.approved_by.get_username() if record.approved_by is not None else None,
        "verified_at": iso(record.verified_at),
        "review_by": iso(record.review_by),
        "valid_from": iso(record.valid_from),
        "valid_until": iso(record.valid_until),
        "supersedes": supersedes.public_id if supersedes is not None and supersedes.space in spaces else None,
        "checksum": record.approved_checksum,
        "confidence": record.confidence,
        "source_tool": record.source_tool,
    }
