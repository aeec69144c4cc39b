"""The JSON export (``export_json``): a whole instance, or some of its
spaces, as one ``vetted-export`` document (see reviews/snapshot/).

With a subset of spaces, a file holds only the records in those spaces,
the proposals about them, and the audit events whose every record and
proposal id belongs to the file: a personal record never appears in a team
export, not even as a link, an id or a title in an audit snippet.
Supersession links to records outside the exported spaces are cut (null).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from datetime import date
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from dbengine import database_engine
from reviews import legacy_events
from reviews.formats import iso
from reviews.models import Agent, AuditEvent, Proposal, Record
from reviews.snapshot.format import (
    AGENT_FIELDS,
    AUDIT_FIELDS,
    FORMAT,
    MENTION_RE,
    PROPOSAL_FIELDS,
    RECORD_FIELDS,
    VERSION,
)
from reviews.snapshot.spaces import export_spaces
from reviews.space_access import space_slugs


def _json_value(value):
    """Dates and times as ISO 8601; everything else as it is."""
    return iso(value) if isinstance(value, date) else value


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
    with database_engine(connection).read_snapshot(connection):
        yield


def export_snapshot(
    spaces: Iterable[str] | None = None,
    *,
    include_token_digests: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """The export document. Read it inside one transaction for a consistent view."""
    every = space_slugs()
    space_list = sorted(set(spaces)) if spaces else every
    full = set(space_list) == set(every)
    users = {u.pk: u.get_username() for u in get_user_model().objects.all()}

    records_qs = Record.objects.filter(space__in=space_list).order_by("id")
    by_pk = {r.pk: r.public_id for r in Record.objects.only("id", "public_id")}
    exported_records = set()
    records, cut_links = [], 0
    for r in records_qs.iterator():
        exported_records.add(r.pk)
    for r in records_qs.iterator():
        row: dict[str, Any] = {}
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
                row[name] = r.proposed_by.public_id if r.proposed_by is not None else None
            else:
                row[name] = _json_value(getattr(r, name))
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
            if p.space and p.space not in space_list:
                continue
            if not p.space and p.target_id is None:
                continue  # about nothing we can place in a space
        row = {}
        for name in PROPOSAL_FIELDS:
            if name in ("target", "result_record"):
                pk = getattr(p, f"{name}_id")
                row[name] = by_pk[pk] if pk is not None else None
            elif name == "agent":
                row[name] = p.agent.public_id if p.agent is not None else None
            elif name == "decided_by":
                row[name] = users[p.decided_by_id] if p.decided_by_id else None
            else:
                row[name] = _json_value(getattr(p, name))
        if not full and any(
            m.startswith("rec_") and m not in exported_public for m in MENTION_RE.findall(repr(list(row.values())))
        ):
            # e.g. "Resolved: rec_… was superseded by rec_…" naming a record moved to another space
            continue
        proposals.append(row)
        exported_proposals.add(p.public_id)
        if progress:
            progress(1)

    proposers = {row["proposed_by"] for row in records} | {row["agent"] for row in proposals}
    # Spaces: the exported spaces with their rules and members (only theirs).
    space_rows = export_spaces(space_list)
    members = {m["user"] for space in space_rows for m in space["members"]}
    agents = []
    for a in Agent.objects.order_by("id").iterator():
        row = {name: _json_value(getattr(a, name)) for name in AGENT_FIELDS}
        if not full:
            # Spaces: a partial export names no other space, not even in an agent's grants.
            row["spaces"] = [s for s in a.spaces if s in space_list]
            if not row["spaces"] and a.public_id not in proposers:
                continue
        row["owner"] = users.get(a.owner_id) if a.owner_id else None
        if not full and row["owner"] not in members:
            row["owner"] = None  # a person outside the exported spaces is not named
        if not include_token_digests:
            row["token_digest"] = None
            row["token_prefix"] = ""
        agents.append(row)

    record_ids = {row["public_id"] for row in records}
    agent_ids = {row["public_id"] for row in agents}
    audit, left_out = [], 0
    for event in AuditEvent.objects.order_by("id").iterator():
        row = {name: _json_value(getattr(event, name)) for name in AUDIT_FIELDS}
        if not full and not (
            _event_belongs(row, record_ids, exported_proposals) and _names_only(row, space_list, agent_ids)
        ):
            left_out += 1
            continue
        audit.append(row)
        if progress:
            progress(1)

    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": timezone.now().isoformat(),
        "space_slugs": space_list,
        "spaces": space_rows,
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
    for mention in MENTION_RE.findall(text):
        if mention not in record_ids and mention not in proposal_ids:
            return False
    if row["subject_type"] == "record" and row["subject_id"] not in record_ids:
        return False
    return not (row["subject_type"] == "proposal" and row["subject_id"] not in proposal_ids)


def _names_only(row: dict, space_list: list[str], agent_ids: set[str]) -> bool:
    """Spaces: an event about a space or an agent stays in a
    scoped export only if its subject is in the file and every space it
    names (a grant list, a space) is one of the exported ones."""
    if row["subject_type"] == "space":
        return row["subject_id"] in space_list
    if row["subject_type"] != "agent":
        return True
    if row["subject_id"] not in agent_ids:
        return False
    extra = row["extra"] if isinstance(row["extra"], dict) else {}
    # Events written before the rename name them under the old keys (legacy_events).
    named = [
        *(legacy_events.value(extra, "spaces") or []),
        *(extra.get("grants") or []),
        legacy_events.value(extra, "space") or "",
    ]
    return all(slug in space_list for slug in named if slug)


def export_counts(document: dict) -> dict:
    return {key: len(document[key]) for key in ("records", "proposals", "agents", "audit")}
