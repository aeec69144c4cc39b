"""Checking a parsed ``vetted-export`` document before anything is written:
every problem is found and listed at once (SnapshotInvalid)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reviews import ids
from reviews.checksum import is_approved_copy
from reviews.models import ProposalAction, ProposalState, RecordStatus
from reviews.space_access import space_slugs

from .format import (
    AGENT_FIELDS,
    AGENT_RE,
    AGENT_TIMES,
    AUDIT_FIELDS,
    FORMAT,
    HEX64_RE,
    PROPOSAL_DATES,
    PROPOSAL_FIELDS,
    PROPOSAL_RE,
    PROPOSAL_TIMES,
    READABLE_VERSIONS,
    RECORD_DATES,
    RECORD_FIELDS,
    RECORD_FIELDS_V1,
    RECORD_RE,
    RECORD_TIMES,
    TOP_LEVEL,
    SnapshotInvalid,
    parse_date,
    parse_dt,
)
from .spaces import check_spaces

Names = Sequence[str] | set[str]


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def fields(self, where: str, row: object, required: list[str]) -> bool:
        if not isinstance(row, dict):
            self.add(where, "must be a JSON object")
            return False
        missing = [name for name in required if name not in row]
        unknown = sorted(set(row) - set(required))
        # Both in one problem: a field under another name (an old one) is
        # then named beside the one expected.
        said = [f"missing field(s) {', '.join(missing)}"] if missing else []
        said += [f"unknown field(s) {', '.join(unknown)}"] if unknown else []
        if said:
            self.add(where, "; ".join(said))
            return False
        return True

    def types(
        self,
        where: str,
        row: dict[str, Any],
        *,
        strings: Names = (),
        optional_strings: Names = (),
        lists: Names = (),
        dicts: Names = (),
        dates: Names = (),
        times: Names = (),
        required_times: Names = (),
    ) -> None:
        for name in strings:
            if not isinstance(row[name], str):
                self.add(where, f"{name} must be a string")
        for name in optional_strings:
            if row[name] is not None and not isinstance(row[name], str):
                self.add(where, f"{name} must be a string or null")
        for name in lists:
            if not isinstance(row[name], list) or not all(isinstance(x, str) for x in row[name]):
                self.add(where, f"{name} must be a list of strings")
        for name in dicts:
            if not isinstance(row[name], dict):
                self.add(where, f"{name} must be a JSON object")
        for name in dates:
            try:
                if row[name] is not None and not isinstance(row[name], str):
                    raise ValueError
                parse_date(row[name])
            except ValueError:
                self.add(where, f"{name} must be a date YYYY-MM-DD or null, got {row[name]!r}")
        for name in times:
            try:
                if row[name] is None and name in required_times:
                    raise ValueError
                if row[name] is not None and not isinstance(row[name], str):
                    raise ValueError
                parse_dt(row[name])
            except ValueError:
                self.add(
                    where,
                    f"{name} must be an ISO 8601 date-time with offset"
                    f"{'' if name in required_times else ' or null'}, got {row[name]!r}",
                )


def validate_snapshot(data: Any) -> dict[str, Any]:
    """Check a parsed document; raise SnapshotInvalid listing every problem.
    Returns counts and facts the import summary uses."""
    c = _Checker()
    if not isinstance(data, dict):
        raise SnapshotInvalid(["the file must hold one JSON object (a vetted-export document)"])
    if data.get("format") != FORMAT:
        raise SnapshotInvalid([f"format is {data.get('format')!r}, expected {FORMAT!r} (a file from `export_json`)"])
    if type(data.get("version")) is not int or data["version"] not in READABLE_VERSIONS:
        raise SnapshotInvalid(
            [
                f"version {data.get('version')!r} is not supported; this Vetted reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}"
            ]
        )
    record_fields = RECORD_FIELDS if data["version"] >= 2 else RECORD_FIELDS_V1
    missing = [key for key in TOP_LEVEL if key not in data]
    if missing:
        raise SnapshotInvalid([f"missing top-level field(s): {', '.join(missing)}"])
    for key in ("records", "proposals", "agents", "audit", "space_slugs"):
        if not isinstance(data[key], list):
            raise SnapshotInvalid([f"{key} must be a list"])
    try:
        parse_dt(str(data["exported_at"]) if data["exported_at"] is not None else "")
    except ValueError:
        c.add("exported_at", f"must be an ISO 8601 date-time with offset, got {data['exported_at']!r}")
    # Spaces: a file's spaces must exist here or be in the file (snapshot/spaces.py).
    known = space_slugs() + sorted(check_spaces(data, c.add) - set(space_slugs()))
    bad_spaces = [s for s in data["space_slugs"] if s not in known]
    if bad_spaces:
        c.add(
            "space_slugs",
            f"unknown space(s) {bad_spaces}; spaces here: {', '.join(known)} (create the others first: "
            "`manage.py space create`)",
        )

    agent_ids, agent_names = set(), set()
    for i, row in enumerate(data["agents"]):
        where = f"agents[{i}]"
        # "owner" (the agent's person) is optional: files written before spaces have none.
        if not c.fields(where, row, AGENT_FIELDS + (["owner"] if isinstance(row, dict) and "owner" in row else [])):
            continue
        where = f"agent {row.get('public_id')!r}"
        before = len(c.problems)
        c.types(
            where,
            row,
            strings=("name", "token_prefix", "source_tool", "created_by"),
            optional_strings=("token_digest", "owner") if "owner" in row else ("token_digest",),
            lists=("spaces",),
            times=AGENT_TIMES,
            required_times=("created_at",),
        )
        if len(c.problems) > before:
            continue
        if not isinstance(row["public_id"], str) or not AGENT_RE.match(row["public_id"]):
            c.add(where, f"public_id must look like {ids.describe(ids.AGENT)}")
        elif row["public_id"] in agent_ids:
            c.add(where, "public_id appears twice")
        if row["name"] in agent_names:
            c.add(where, f"name {row['name']!r} appears twice")
        agent_ids.add(row["public_id"])
        agent_names.add(row["name"])
        if row["token_digest"] is not None and not HEX64_RE.match(str(row["token_digest"])):
            c.add(where, "token_digest must be 64 lowercase hex digits or null")
        if not isinstance(row["is_active"], bool):
            c.add(where, "is_active must be true or false")

    records: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(data["records"]):
        where = f"records[{i}]"
        if not c.fields(where, row, record_fields):
            continue
        where = f"record {row.get('public_id')!r}"
        before = len(c.problems)
        c.types(
            where,
            row,
            strings=(
                "kind",
                "space",
                "status",
                "title",
                "body",
                "approved_checksum",
                "approved_by",
                "source_tool",
                "reason",
                "session",
            ),
            optional_strings=("supersedes", "superseded_by", "proposed_by"),
            lists=("tags",),
            dicts=("metadata",),
            dates=RECORD_DATES,
            times=RECORD_TIMES,
            required_times=("approved_at", "created_at", "updated_at"),
        )
        if len(c.problems) > before:
            continue
        if row["review_by"] is None:
            c.add(where, "review_by is required")
        if not isinstance(row["public_id"], str) or not RECORD_RE.match(row["public_id"]):
            c.add(where, f"public_id must look like {ids.describe(ids.RECORD)}")
            continue
        if row["public_id"] in records:
            c.add(where, "public_id appears twice")
        records[row["public_id"]] = row
        if row["space"] not in known:
            c.add(where, f"space {row['space']!r} is not one of {', '.join(known)}")
        elif data["space_slugs"] and row["space"] not in data["space_slugs"]:
            c.add(where, f"space {row['space']!r} is not among the file's spaces {data['space_slugs']}")
        if row["status"] not in RecordStatus.values:
            c.add(where, f"status {row['status']!r} is not one of {', '.join(RecordStatus.values)}")
        if not HEX64_RE.match(str(row["approved_checksum"])):
            c.add(where, "approved_checksum must be 64 lowercase hex digits")
        elif row.get("approved_content") is not None and not is_approved_copy(
            row["approved_content"], row["approved_checksum"]
        ):
            # Restoring would write this text back: it must be what was approved.
            c.add(
                where,
                "approved_content must be null or an object with exactly kind, space, title, body and "
                "tags whose checksum is approved_checksum",
            )
        if not row["approved_by"]:
            c.add(where, "approved_by must name a user")
        if row["proposed_by"] is not None and row["proposed_by"] not in agent_ids:
            c.add(where, f"proposed_by {row['proposed_by']!r} is not an agent in the file")
        if row["confidence"] is not None and (
            isinstance(row["confidence"], bool) or not isinstance(row["confidence"], (int, float))
        ):
            c.add(where, "confidence must be a number or null")
        if isinstance(row["access_count"], bool) or not isinstance(row["access_count"], int) or row["access_count"] < 0:
            c.add(where, "access_count must be a whole number >= 0")
    for rid, row in records.items():
        where = f"record {rid!r}"
        for link in ("supersedes", "superseded_by"):
            other = row[link]
            if other is None:
                continue
            if other not in records:
                c.add(where, f"{link} points to {other!r}, which is not in the file")
                continue
            if other == rid:
                c.add(where, f"{link} points to itself")
        after = row["superseded_by"]
        if after in records and records[after]["supersedes"] != rid:
            c.add(where, f"superseded_by {after!r}, but {after!r} supersedes {records[after]['supersedes']!r}")
        before = row["supersedes"]
        if before in records and records[before]["superseded_by"] != rid:
            c.add(where, f"supersedes {before!r}, but {before!r} is superseded by {records[before]['superseded_by']!r}")
        if after is not None and row["status"] != RecordStatus.SUPERSEDED:
            c.add(where, f"has a successor ({after!r}) but its status is {row['status']!r}, not superseded")

    proposal_ids = set()
    for i, row in enumerate(data["proposals"]):
        where = f"proposals[{i}]"
        if not c.fields(where, row, PROPOSAL_FIELDS):
            continue
        where = f"proposal {row.get('public_id')!r}"
        before = len(c.problems)
        c.types(
            where,
            row,
            strings=(
                "action",
                "state",
                "kind",
                "space",
                "title",
                "body",
                "content_checksum",
                "reason",
                "proposed_by_user",
                "source_tool",
                "session",
                "decision_note",
            ),
            optional_strings=("decided_by", "target", "result_record", "agent"),
            lists=("tags",),
            dicts=("metadata", "reviewer_changes"),
            dates=PROPOSAL_DATES,
            times=PROPOSAL_TIMES,
            required_times=("created_at", "updated_at"),
        )
        if len(c.problems) > before:
            continue
        if not isinstance(row["public_id"], str) or not PROPOSAL_RE.match(row["public_id"]):
            c.add(where, f"public_id must look like {ids.describe(ids.PROPOSAL)}")
        elif row["public_id"] in proposal_ids:
            c.add(where, "public_id appears twice")
        proposal_ids.add(row["public_id"])
        if row["action"] not in ProposalAction.values:
            c.add(where, f"action {row['action']!r} is not one of {', '.join(ProposalAction.values)}")
        if row["state"] not in ProposalState.values:
            c.add(where, f"state {row['state']!r} is not one of {', '.join(ProposalState.values)}")
        for link in ("target", "result_record"):
            if row[link] is not None and row[link] not in records:
                c.add(where, f"{link} points to {row[link]!r}, which is not in the file")
        if row["agent"] is not None and row["agent"] not in agent_ids:
            c.add(where, f"agent {row['agent']!r} is not an agent in the file")
        if (
            row["action"] in (ProposalAction.REVISE, ProposalAction.RETIRE, ProposalAction.DISPUTE)
            and row["target"] is None
        ):
            c.add(where, f"a {row['action']} proposal needs a target record")
        if (
            row["state"] == ProposalState.ACCEPTED
            and row["action"] in (ProposalAction.CREATE, ProposalAction.REVISE)
            and row["result_record"] is None
        ):
            c.add(where, f"an accepted {row['action']} proposal needs its result_record")

    audit_ids = set()
    for i, row in enumerate(data["audit"]):
        where = f"audit[{i}]"
        if not c.fields(where, row, AUDIT_FIELDS):
            continue
        where = f"audit event {row.get('id')!r}"
        c.types(
            where,
            row,
            strings=(
                "event_type",
                "actor_type",
                "actor",
                "subject_type",
                "subject_id",
                "record_ref",
                "proposal_ref",
                "checksum_before",
                "checksum_after",
                "snippet",
            ),
            dicts=("extra",),
            times=("at",),
            required_times=("at",),
        )
        if isinstance(row["id"], bool) or not isinstance(row["id"], int) or row["id"] < 1:
            c.add(where, "id must be a whole number >= 1")
        elif row["id"] in audit_ids:
            c.add(where, "id appears twice")
        audit_ids.add(row["id"])

    if c.problems:
        raise SnapshotInvalid(c.problems)
    return {
        "records": len(records),
        "proposals": len(data["proposals"]),
        "agents": len(data["agents"]),
        "audit": len(data["audit"]),
    }
