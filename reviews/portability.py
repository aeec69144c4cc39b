"""Export and import of a whole instance as one JSON document.

Format (``"format": "vetted-export", "version": 1``; see the README):

    {"format": "vetted-export", "version": 1, "exported_at": ISO-8601,
     "scopes": [...], "include_token_digests": bool,
     "records": [...], "proposals": [...], "agents": [...], "audit": [...]}

Every model field is written; foreign keys become public ids (records,
proposals, agents) or usernames (users); datetimes are ISO 8601 with their
offset, dates YYYY-MM-DD. Audit events keep their integer ``id``.

With a subset of scopes, a file holds only the records in those scopes,
the proposals about them, and the audit events whose every record and
proposal id belongs to the file: a personal record never appears in a team
export, not even as a link, an id or a title in an audit snippet.
Supersession links to records outside the exported scopes are cut (null).

This module reads and validates; the import itself (the state change) is
``reviews.actions.import_snapshot``, which calls ``write_snapshot`` here.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from datetime import date, datetime

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from . import confusables
from .models import (
    SCOPES,
    Agent,
    AuditEvent,
    Proposal,
    ProposalAction,
    ProposalState,
    Record,
    RecordStatus,
)

FORMAT = "vetted-export"
VERSION = 1

RECORD_RE = re.compile(r"^rec_[0-9a-f]{12}$")
PROPOSAL_RE = re.compile(r"^prop_[0-9a-f]{12}$")
AGENT_RE = re.compile(r"^agt_[0-9a-f]{12}$")
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
# Any record or proposal id mentioned anywhere in an audit event.
_MENTION_RE = re.compile(r"\b(?:rec|prop)_[0-9a-f]{12}\b")

RECORD_FIELDS = [
    "public_id", "kind", "scope", "title", "body", "tags", "status", "review_by", "approved_checksum",
    "approved_at", "approved_by", "verified_at", "valid_from", "valid_until", "supersedes", "superseded_by",
    "proposed_by", "source_tool", "reason", "session", "confidence", "access_count", "metadata",
    "created_at", "updated_at",
]
PROPOSAL_FIELDS = [
    "public_id", "action", "target", "state", "kind", "scope", "title", "body", "tags", "review_by",
    "valid_from", "valid_until", "confidence", "metadata", "content_checksum", "reason", "agent",
    "proposed_by_user", "source_tool", "session", "decided_by", "decided_at", "decision_note",
    "reviewer_changes", "result_record", "created_at", "updated_at",
]
AGENT_FIELDS = [
    "public_id", "name", "token_digest", "token_prefix", "scopes", "source_tool", "is_active", "last_seen_at",
    "created_at", "created_by", "revoked_at",
]
AUDIT_FIELDS = [
    "id", "event_type", "at", "actor_type", "actor", "subject_type", "subject_id", "record_ref", "proposal_ref",
    "checksum_before", "checksum_after", "snippet", "extra",
]
TOP_LEVEL = ["format", "version", "exported_at", "scopes", "records", "proposals", "agents", "audit"]

_RECORD_DATES = ("review_by", "valid_from", "valid_until")
_RECORD_TIMES = ("approved_at", "verified_at", "created_at", "updated_at")
_PROPOSAL_DATES = ("review_by", "valid_from", "valid_until")
_PROPOSAL_TIMES = ("decided_at", "created_at", "updated_at")
_AGENT_TIMES = ("last_seen_at", "created_at", "revoked_at")


class SnapshotInvalid(Exception):
    """The file cannot be imported; ``problems`` lists every reason found."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:20]
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        super().__init__("; ".join(shown) + more)


def _iso(value):
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


# --------------------------------------------------------------------------- export


@contextlib.contextmanager
def read_snapshot():
    """One consistent view for a long read without taking the write lock:
    Django's transactions start with BEGIN IMMEDIATE (the write lock), which
    would stall the daemon's writers for the whole export. A deferred
    transaction in WAL mode reads one snapshot while writers go on."""
    connection.ensure_connection()
    if connection.in_atomic_block:
        yield  # already inside a transaction (tests): that is the snapshot
        return
    with connection.cursor() as cursor:
        cursor.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("COMMIT")


def export_snapshot(scopes: Iterable[str] | None = None, *, include_token_digests: bool = False,
                    progress: Callable[[int], None] | None = None) -> dict:
    """The export document. Read it inside one transaction for a consistent view."""
    scope_list = sorted(set(scopes)) if scopes else list(SCOPES)
    full = set(scope_list) == set(SCOPES)
    users = {u.pk: u.get_username() for u in get_user_model().objects.all()}

    records_qs = Record.objects.filter(scope__in=scope_list).order_by("id")
    by_pk = {r.pk: r.public_id for r in Record.objects.only("id", "public_id")}
    exported_records = set()
    records, cut_links = [], 0
    for r in records_qs.iterator():
        exported_records.add(r.pk)
    for r in records_qs.iterator():
        row = {}
        for name in RECORD_FIELDS:
            if name == "approved_by":
                row[name] = users[r.approved_by_id]
            elif name in ("supersedes", "superseded_by"):
                pk = getattr(r, f"{name}_id")
                if pk is not None and pk not in exported_records:
                    cut_links += 1
                    pk = None
                row[name] = by_pk[pk] if pk is not None else None
            elif name == "proposed_by":
                row[name] = r.proposed_by.public_id if r.proposed_by_id else None
            else:
                row[name] = _iso(getattr(r, name))
        records.append(row)
        if progress:
            progress(1)

    proposals = []
    exported_proposals = set()
    exported_public = {by_pk[pk] for pk in exported_records}
    for p in Proposal.objects.select_related("agent").order_by("id").iterator():
        if not full:
            if p.target_id is not None and p.target_id not in exported_records:
                continue
            if p.result_record_id is not None and p.result_record_id not in exported_records:
                continue
            if p.scope and p.scope not in scope_list:
                continue
            if not p.scope and p.target_id is None:
                continue  # about nothing we can place in a scope
        row = {}
        for name in PROPOSAL_FIELDS:
            if name in ("target", "result_record"):
                pk = getattr(p, f"{name}_id")
                row[name] = by_pk[pk] if pk is not None else None
            elif name == "agent":
                row[name] = p.agent.public_id if p.agent_id else None
            elif name == "decided_by":
                row[name] = users[p.decided_by_id] if p.decided_by_id else None
            else:
                row[name] = _iso(getattr(p, name))
        if not full and any(m.startswith("rec_") and m not in exported_public
                            for m in _MENTION_RE.findall(repr(list(row.values())))):
            # e.g. "Resolved: rec_… was superseded by rec_…" naming a record moved to another space
            continue
        proposals.append(row)
        exported_proposals.add(p.public_id)
        if progress:
            progress(1)

    agents = []
    for a in Agent.objects.order_by("id").iterator():
        row = {name: _iso(getattr(a, name)) for name in AGENT_FIELDS}
        if not include_token_digests:
            row["token_digest"] = None
            row["token_prefix"] = ""
        agents.append(row)

    record_ids = {row["public_id"] for row in records}
    audit, left_out = [], 0
    for event in AuditEvent.objects.order_by("id").iterator():
        row = {name: _iso(getattr(event, name)) for name in AUDIT_FIELDS}
        if not full and not _event_belongs(row, record_ids, exported_proposals):
            left_out += 1
            continue
        audit.append(row)
        if progress:
            progress(1)

    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": timezone.now().isoformat(),
        "scopes": scope_list,
        "include_token_digests": include_token_digests,
        "records": records,
        "proposals": proposals,
        "agents": agents,
        "audit": audit,
        "notes": {"cut_supersession_links": cut_links, "audit_events_left_out": left_out},
    }


def _event_belongs(row: dict, record_ids: set[str], proposal_ids: set[str]) -> bool:
    """A scoped export keeps an event only if every record or proposal it
    mentions (in any field, extra and snippet included) is in the file."""
    text = repr([row[name] for name in AUDIT_FIELDS])
    for mention in _MENTION_RE.findall(text):
        if mention not in record_ids and mention not in proposal_ids:
            return False
    if row["subject_type"] == "record" and row["subject_id"] not in record_ids:
        return False
    return not (row["subject_type"] == "proposal" and row["subject_id"] not in proposal_ids)


def export_counts(document: dict) -> dict:
    return {key: len(document[key]) for key in ("records", "proposals", "agents", "audit")}


# --------------------------------------------------------------------------- validation


def _parse_dt(value):
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    if timezone.is_naive(parsed):
        raise ValueError("has no UTC offset")
    return parsed


def _parse_date(value):
    return None if value is None else date.fromisoformat(value)


class _Checker:
    def __init__(self):
        self.problems: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def fields(self, where: str, row, required: list[str]) -> bool:
        if not isinstance(row, dict):
            self.add(where, "must be a JSON object")
            return False
        missing = [name for name in required if name not in row]
        if missing:
            self.add(where, f"missing field(s) {', '.join(missing)}")
            return False
        unknown = sorted(set(row) - set(required))
        if unknown:
            self.add(where, f"unknown field(s) {', '.join(unknown)}")
            return False
        return True

    def types(self, where: str, row: dict, *, strings=(), optional_strings=(), lists=(), dicts=(),
              dates=(), times=(), required_times=()) -> None:
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
                _parse_date(row[name])
            except ValueError:
                self.add(where, f"{name} must be a date YYYY-MM-DD or null, got {row[name]!r}")
        for name in times:
            try:
                if row[name] is None and name in required_times:
                    raise ValueError
                if row[name] is not None and not isinstance(row[name], str):
                    raise ValueError
                _parse_dt(row[name])
            except ValueError:
                self.add(where, f"{name} must be an ISO 8601 date-time with offset{'' if name in required_times else ' or null'}, got {row[name]!r}")


def validate_snapshot(data) -> dict:
    """Check a parsed document; raise SnapshotInvalid listing every problem.
    Returns counts and facts the import summary uses."""
    c = _Checker()
    if not isinstance(data, dict):
        raise SnapshotInvalid(["the file must hold one JSON object (a vetted-export document)"])
    if data.get("format") != FORMAT:
        raise SnapshotInvalid([f"format is {data.get('format')!r}, expected {FORMAT!r} (a file from `export_json`)"])
    if data.get("version") != VERSION:
        raise SnapshotInvalid([f"version {data.get('version')!r} is not supported; this Vetted reads version {VERSION}"])
    missing = [key for key in TOP_LEVEL if key not in data]
    if missing:
        raise SnapshotInvalid([f"missing top-level field(s): {', '.join(missing)}"])
    for key in ("records", "proposals", "agents", "audit", "scopes"):
        if not isinstance(data[key], list):
            raise SnapshotInvalid([f"{key} must be a list"])
    try:
        _parse_dt(str(data["exported_at"]) if data["exported_at"] is not None else "")
    except ValueError:
        c.add("exported_at", f"must be an ISO 8601 date-time with offset, got {data['exported_at']!r}")
    bad_scopes = [s for s in data["scopes"] if s not in SCOPES]
    if bad_scopes:
        c.add("scopes", f"unknown scope(s) {bad_scopes}; expected some of {', '.join(SCOPES)}")

    agent_ids, agent_names = set(), set()
    for i, row in enumerate(data["agents"]):
        where = f"agents[{i}]"
        if not c.fields(where, row, AGENT_FIELDS):
            continue
        where = f"agent {row.get('public_id')!r}"
        before = len(c.problems)
        c.types(where, row, strings=("name", "token_prefix", "source_tool", "created_by"),
                optional_strings=("token_digest",), lists=("scopes",), times=_AGENT_TIMES,
                required_times=("created_at",))
        if len(c.problems) > before:
            continue
        if not isinstance(row["public_id"], str) or not AGENT_RE.match(row["public_id"]):
            c.add(where, "public_id must look like agt_ followed by 12 hex digits")
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

    records: dict[str, dict] = {}
    for i, row in enumerate(data["records"]):
        where = f"records[{i}]"
        if not c.fields(where, row, RECORD_FIELDS):
            continue
        where = f"record {row.get('public_id')!r}"
        before = len(c.problems)
        c.types(where, row, strings=("kind", "scope", "status", "title", "body", "approved_checksum", "approved_by", "source_tool",
                                     "reason", "session"),
                optional_strings=("supersedes", "superseded_by", "proposed_by"),
                lists=("tags",), dicts=("metadata",), dates=_RECORD_DATES, times=_RECORD_TIMES,
                required_times=("approved_at", "created_at", "updated_at"))
        if len(c.problems) > before:
            continue
        if row["review_by"] is None:
            c.add(where, "review_by is required")
        if not isinstance(row["public_id"], str) or not RECORD_RE.match(row["public_id"]):
            c.add(where, "public_id must look like rec_ followed by 12 hex digits")
            continue
        if row["public_id"] in records:
            c.add(where, "public_id appears twice")
        records[row["public_id"]] = row
        if row["scope"] not in SCOPES:
            c.add(where, f"scope {row['scope']!r} is not one of {', '.join(SCOPES)}")
        elif data["scopes"] and row["scope"] not in data["scopes"]:
            c.add(where, f"scope {row['scope']!r} is not among the file's scopes {data['scopes']}")
        if row["status"] not in RecordStatus.values:
            c.add(where, f"status {row['status']!r} is not one of {', '.join(RecordStatus.values)}")
        if not HEX64_RE.match(str(row["approved_checksum"])):
            c.add(where, "approved_checksum must be 64 lowercase hex digits")
        if not row["approved_by"]:
            c.add(where, "approved_by must name a user")
        if row["proposed_by"] is not None and row["proposed_by"] not in agent_ids:
            c.add(where, f"proposed_by {row['proposed_by']!r} is not an agent in the file")
        if row["confidence"] is not None and (isinstance(row["confidence"], bool)
                                              or not isinstance(row["confidence"], (int, float))):
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
        c.types(where, row, strings=("action", "state", "kind", "scope", "title", "body", "content_checksum", "reason",
                                     "proposed_by_user", "source_tool", "session", "decision_note"),
                optional_strings=("decided_by", "target", "result_record", "agent"), lists=("tags",),
                dicts=("metadata", "reviewer_changes"),
                dates=_PROPOSAL_DATES, times=_PROPOSAL_TIMES, required_times=("created_at", "updated_at"))
        if len(c.problems) > before:
            continue
        if not isinstance(row["public_id"], str) or not PROPOSAL_RE.match(row["public_id"]):
            c.add(where, "public_id must look like prop_ followed by 12 hex digits")
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
        if row["action"] in (ProposalAction.REVISE, ProposalAction.RETIRE, ProposalAction.DISPUTE) and row["target"] is None:
            c.add(where, f"a {row['action']} proposal needs a target record")
        if row["state"] == ProposalState.ACCEPTED and row["action"] in (ProposalAction.CREATE, ProposalAction.REVISE) \
                and row["result_record"] is None:
            c.add(where, f"an accepted {row['action']} proposal needs its result_record")

    audit_ids = set()
    for i, row in enumerate(data["audit"]):
        where = f"audit[{i}]"
        if not c.fields(where, row, AUDIT_FIELDS):
            continue
        where = f"audit event {row.get('id')!r}"
        c.types(where, row, strings=("event_type", "actor_type", "actor", "subject_type", "subject_id",
                                     "record_ref", "proposal_ref", "checksum_before", "checksum_after", "snippet"),
                dicts=("extra",), times=("at",), required_times=("at",))
        if isinstance(row["id"], bool) or not isinstance(row["id"], int) or row["id"] < 1:
            c.add(where, "id must be a whole number >= 1")
        elif row["id"] in audit_ids:
            c.add(where, "id appears twice")
        audit_ids.add(row["id"])

    if c.problems:
        raise SnapshotInvalid(c.problems)
    return {"records": len(records), "proposals": len(data["proposals"]), "agents": len(data["agents"]),
            "audit": len(data["audit"])}


# --------------------------------------------------------------------------- writing (called by actions)


def _look_alike_keys(row: dict, *, title: bool = False) -> dict:
    """The derived look-alike keys (not exported: computed from the text)."""
    keys = {"skeleton_checksum": confusables.content_key(kind=row["kind"], scope=row["scope"], title=row["title"],
                                                        body=row["body"], tags=row["tags"])}
    if title:
        keys["title_skeleton"] = confusables.title_key(row["title"])
    return keys


def write_snapshot(data: dict, *, progress: Callable[[int], None] | None = None) -> dict:
    """Insert everything in ``data`` (validated) in the current transaction.
    Returns facts for the summary. Only reviews.actions.import_snapshot calls this."""
    User = get_user_model()
    usernames = {row["approved_by"] for row in data["records"]}
    usernames |= {row["decided_by"] for row in data["proposals"] if row["decided_by"]}
    user_pk, created_users = {}, []
    for name in sorted(usernames):
        user = User.objects.filter(username=name).first()
        if user is None:
            user = User(username=name, is_active=False)
            user.set_unusable_password()
            user.save()
            created_users.append(name)
        user_pk[name] = user.pk

    agent_pk, mapped_agents, created_agents, tokenless = {}, [], [], []
    for row in data["agents"]:
        existing = Agent.objects.filter(public_id=row["public_id"]).first()
        same_name = Agent.objects.filter(name=row["name"]).first()
        if existing is not None and existing.name != row["name"]:
            raise SnapshotInvalid([(f"agent {row['public_id']!r}: this instance already has that id for agent "
                                    f"{existing.name!r}, not {row['name']!r}")])
        target = existing or same_name
        if target is not None:
            agent_pk[row["public_id"]] = target.pk
            mapped_agents.append(row["name"])
            continue
        if row["token_digest"] and Agent.objects.filter(token_digest=row["token_digest"]).exists():
            raise SnapshotInvalid([f"agent {row['name']!r}: its token digest is already used by an agent here"])
        fields = {name: row[name] for name in AGENT_FIELDS}
        for name in _AGENT_TIMES:
            fields[name] = _parse_dt(fields[name])
        agent = Agent.objects.create(**fields)
        agent_pk[row["public_id"]] = agent.pk
        created_agents.append(row["name"])
        if not row["token_digest"] and row["is_active"] and row["name"] != "import":
            tokenless.append(row["name"])

    record_pk = {}
    for row in data["records"]:
        fields = {name: row[name] for name in RECORD_FIELDS
                  if name not in ("approved_by", "supersedes", "superseded_by", "proposed_by")}
        for name in _RECORD_DATES:
            fields[name] = _parse_date(fields[name])
        for name in _RECORD_TIMES:
            fields[name] = _parse_dt(fields[name])
        record = Record.objects.create(
            **fields, **_look_alike_keys(row, title=True), approved_by_id=user_pk[row["approved_by"]],
            proposed_by_id=agent_pk[row["proposed_by"]] if row["proposed_by"] else None,
        )
        record_pk[row["public_id"]] = record.pk
        if progress:
            progress(1)
    for row in data["records"]:
        # Links once every row exists; updated_at again, because auto_now
        # overwrote it on insert (QuerySet.update leaves auto_now alone).
        Record.objects.filter(pk=record_pk[row["public_id"]]).update(
            supersedes_id=record_pk.get(row["supersedes"]), superseded_by_id=record_pk.get(row["superseded_by"]),
            updated_at=_parse_dt(row["updated_at"]),
        )

    for row in data["proposals"]:
        fields = {name: row[name] for name in PROPOSAL_FIELDS
                  if name not in ("target", "result_record", "agent", "decided_by")}
        for name in _PROPOSAL_DATES:
            fields[name] = _parse_date(fields[name])
        for name in _PROPOSAL_TIMES:
            fields[name] = _parse_dt(fields[name])
        proposal = Proposal.objects.create(
            **fields, **(_look_alike_keys(row) if row["content_checksum"] else {}),
            target_id=record_pk.get(row["target"]), result_record_id=record_pk.get(row["result_record"]),
            agent_id=agent_pk[row["agent"]] if row["agent"] else None,
            decided_by_id=user_pk[row["decided_by"]] if row["decided_by"] else None,
        )
        Proposal.objects.filter(pk=proposal.pk).update(updated_at=fields["updated_at"])
        if progress:
            progress(1)

    # The write log verbatim, original ids included. Events already here (the
    # new instance's own account and agents) may hold some of those ids: then
    # every imported id is shifted by one constant, recorded in the import's
    # own event, so order and gaps survive.
    original = [row["id"] for row in data["audit"]]
    offset = 0
    if original:
        existing_ids = set(AuditEvent.objects.filter(id__gte=min(original), id__lte=max(original))
                           .values_list("id", flat=True))
        if existing_ids & set(original):
            last = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
            offset = last - min(original) + 1
    batch = []
    for row in data["audit"]:
        fields = {name: row[name] for name in AUDIT_FIELDS}
        fields["id"] = row["id"] + offset
        fields["at"] = _parse_dt(row["at"])
        batch.append(AuditEvent(**fields))
        if len(batch) >= 500:
            AuditEvent.objects.bulk_create(batch)
            batch = []
        if progress:
            progress(1)
    if batch:
        AuditEvent.objects.bulk_create(batch)

    edited = [row["public_id"] for row in data["records"]
              if Record(kind=row["kind"], scope=row["scope"], title=row["title"], body=row["body"],
                        tags=row["tags"]).current_checksum() != row["approved_checksum"]]
    return {
        "users_created_inactive": created_users,
        "agents_created": created_agents,
        "agents_mapped": mapped_agents,
        "agents_without_token": tokenless,
        "audit_id_offset": offset,
        "edited_since_approval": edited,
    }
