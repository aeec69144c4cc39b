"""The ``vetted-export`` document: its version and every field it holds."""

from __future__ import annotations

import re
from datetime import date, datetime

from django.utils import timezone

from reviews import ids

FORMAT = "vetted-export"
# Version 3 names the space ``space`` everywhere (1 and 2 used the old name ``scope``:
# legacy.py reads them).
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)

RECORD_RE = ids.RECORD_ID_RE
PROPOSAL_RE = ids.PROPOSAL_ID_RE
AGENT_RE = ids.AGENT_ID_RE
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
# Any record or proposal id mentioned anywhere in an audit event.
MENTION_RE = ids.MENTION_RE

RECORD_FIELDS = [
    "public_id",
    "kind",
    "space",
    "title",
    "body",
    "tags",
    "status",
    "review_by",
    "approved_checksum",
    "approved_at",
    "approved_by",
    "verified_at",
    "valid_from",
    "valid_until",
    "supersedes",
    "superseded_by",
    "proposed_by",
    "source_tool",
    "reason",
    "session",
    "confidence",
    "access_count",
    "metadata",
    "created_at",
    "updated_at",
    "approved_content",
]
# Version 1 files have no approved_content (see load.py: it is derived).
RECORD_FIELDS_V1 = [name for name in RECORD_FIELDS if name != "approved_content"]
PROPOSAL_FIELDS = [
    "public_id",
    "action",
    "target",
    "state",
    "kind",
    "space",
    "title",
    "body",
    "tags",
    "review_by",
    "valid_from",
    "valid_until",
    "confidence",
    "metadata",
    "content_checksum",
    "reason",
    "agent",
    "proposed_by_user",
    "source_tool",
    "session",
    "decided_by",
    "decided_at",
    "decision_note",
    "reviewer_changes",
    "result_record",
    "created_at",
    "updated_at",
]
AGENT_FIELDS = [
    "public_id",
    "name",
    "token_digest",
    "token_prefix",
    "spaces",
    "source_tool",
    "is_active",
    "last_seen_at",
    "created_at",
    "created_by",
    "revoked_at",
]
AUDIT_FIELDS = [
    "id",
    "event_type",
    "at",
    "actor_type",
    "actor",
    "subject_type",
    "subject_id",
    "record_ref",
    "proposal_ref",
    "checksum_before",
    "checksum_after",
    "snippet",
    "extra",
]
TOP_LEVEL = ["format", "version", "exported_at", "space_slugs", "records", "proposals", "agents", "audit"]

RECORD_DATES = ("review_by", "valid_from", "valid_until")
RECORD_TIMES = ("approved_at", "verified_at", "created_at", "updated_at")
PROPOSAL_DATES = ("review_by", "valid_from", "valid_until")
PROPOSAL_TIMES = ("decided_at", "created_at", "updated_at")
AGENT_TIMES = ("last_seen_at", "created_at", "revoked_at")


class SnapshotInvalid(Exception):
    """The file cannot be imported; ``problems`` lists every reason found."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:20]
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        super().__init__("; ".join(shown) + more)


def parse_dt(value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    if timezone.is_naive(parsed):
        raise ValueError("has no UTC offset")
    return parsed


def parse_date(value: str | None) -> date | None:
    return None if value is None else date.fromisoformat(value)
