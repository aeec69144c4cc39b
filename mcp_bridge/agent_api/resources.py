"""Records and proposals as MCP resources: ``vetted://records/{id}`` for each
record the agent may receive right now, ``vetted://proposals/{id}`` for each
of its own proposals.

Reading one goes through the same gate as the ``read`` tool and
``proposal_status``; a record that is withheld (retired, superseded,
disputed, overdue, edited since approval), outside the agent's spaces or
unknown answers with one and the same ``NotFound`` message, as does another
agent's proposal. The list is paged by public id (random), so a cursor tells
nothing about how many records exist elsewhere.
"""

from __future__ import annotations

import json

from django.db import connection
from django.db.models import Max
from django.utils import timezone

from dbengine import database_engine
from notify.models import OutboxEvent
from retrieval.gate import Reader, read_record, withhold_reason
from reviews import ids
from reviews.errors import NotFound, ValidationFailed
from reviews.models import Agent, AuditEvent, Proposal, Record

from .grant import Credential, agent_for, own_proposals, spaces
from .limits import read_limiter
from .reads import proposal_status, read
from .shapes import proposal_shape, record_full

RECORD_URI = "vetted://records/{id}"
PROPOSAL_URI = "vetted://proposals/{id}"
PAGE_SIZE = 50

_RECORD_PREFIX = RECORD_URI.removesuffix("{id}")
_PROPOSAL_PREFIX = PROPOSAL_URI.removesuffix("{id}")


def _unknown(uri: str) -> NotFound:
    return NotFound(f"No resource {uri[:120]!r} for you (unknown, not yours to read, or withheld right now).")


def read_resource(agent: Agent, uri: str) -> str:
    """The JSON text of one resource the agent may receive, or NotFound."""
    uri = str(uri)
    if uri.startswith(_RECORD_PREFIX) and ids.RECORD_ID_RE.match(uri.removeprefix(_RECORD_PREFIX)):
        try:
            answer = read(agent, uri.removeprefix(_RECORD_PREFIX))
        except NotFound:
            raise _unknown(uri) from None
        if not answer["deliverable"]:  # withheld: nothing of it, not even why
            raise _unknown(uri)
        return json.dumps(answer["record"], ensure_ascii=False)
    if uri.startswith(_PROPOSAL_PREFIX) and ids.PROPOSAL_ID_RE.match(uri.removeprefix(_PROPOSAL_PREFIX)):
        try:
            return json.dumps(proposal_status(agent, uri.removeprefix(_PROPOSAL_PREFIX)), ensure_ascii=False)
        except NotFound:
            raise _unknown(uri) from None
    read_limiter.hit(agent)  # a malformed uri costs a read like any other
    raise _unknown(uri)


def list_resources(agent: Agent, cursor: str | None) -> tuple[list[dict], str | None]:
    """One page: records the agent may receive (by id), then its own
    proposals (by id). ``cursor`` is the last id of the previous page."""
    read_limiter.hit(agent)
    cursor = (cursor or "").strip()
    if cursor and not (ids.RECORD_ID_RE.match(cursor) or ids.PROPOSAL_ID_RE.match(cursor)):
        raise ValidationFailed({"cursor": f"got {cursor[:40]!r}; pass the nextCursor of the previous page, or none"})
    items: list[dict] = []
    if not cursor.startswith("prop_"):
        today = timezone.localdate()
        rows = Record.objects.deliverable(spaces(agent), today).order_by("public_id")
        after = cursor
        # In batches: the checksum part of the gate is applied here, in Python.
        while len(items) <= PAGE_SIZE:
            batch = list((rows.filter(public_id__gt=after) if after else rows)[: PAGE_SIZE * 2])
            if not batch:
                break
            items += [_record_item(r) for r in batch if withhold_reason(r, today) is None]
            after = batch[-1].public_id
        cursor = ""
    if len(items) <= PAGE_SIZE:
        mine = own_proposals(agent).order_by("public_id")
        if cursor:
            mine = mine.filter(public_id__gt=cursor)
        items += [_proposal_item(p) for p in mine[: PAGE_SIZE + 1 - len(items)]]
    if len(items) > PAGE_SIZE:
        items = items[:PAGE_SIZE]
        return items, items[-1]["id"]
    return items, None


def _record_item(record: Record) -> dict:
    return {
        "id": record.public_id,
        "uri": RECORD_URI.format(id=record.public_id),
        "name": record.public_id,
        "title": record.title,
        "description": f"{record.kind} in {record.space}",
    }


def _proposal_item(proposal: Proposal) -> dict:
    return {
        "id": proposal.public_id,
        "uri": PROPOSAL_URI.format(id=proposal.public_id),
        "name": proposal.public_id,
        "title": proposal.title or f"{proposal.action} proposal",
        "description": f"your {proposal.action} proposal, {proposal.state}",
    }


def change_notice(credential: Credential, uri: str) -> tuple[str, dict] | None:
    """What an agent subscribed to ``uri`` may be told about it now: a
    fingerprint of everything it could read there (so it is told only when
    that changed, never about activity it cannot see, such as another
    agent's proposal about the record) and the notification's ``_meta``: for
    its own proposal the state and the reviewer's note, for a record it may
    know of whether it is deliverable (or why not, as ``read`` says). None
    for unknown ids, records outside the spaces its credential may see
    (``grant``: the sign-in's, not every space the agent holds), other
    agents' proposals and ended credentials: they hear nothing."""
    agent = agent_for(credential)
    if agent is None:
        return None
    seen: dict
    meta: dict[str, object]
    if uri.startswith(_PROPOSAL_PREFIX):
        proposal = own_proposals(agent).filter(public_id=uri.removeprefix(_PROPOSAL_PREFIX)).first()
        if proposal is None:
            return None
        seen = proposal_shape(proposal)
        meta = {"vetted/state": proposal.state, "vetted/decision_note": proposal.decision_note}
    elif uri.startswith(_RECORD_PREFIX):
        try:
            result = read_record(uri.removeprefix(_RECORD_PREFIX), Reader.for_agent(agent))
        except NotFound:
            return None
        seen = (
            record_full(result.record, spaces(agent))
            if result.record is not None
            else {"withheld": result.withheld, "current_version": getattr(result.successor, "public_id", None)}
        )
        meta = {"vetted/deliverable": result.record is not None, "vetted/withheld": result.withheld}
    else:
        return None
    return json.dumps(seen, sort_keys=True, default=str), meta


# PostgreSQL (several daemons): an id is taken at INSERT but seen only at
# COMMIT, so a row with a lower id can appear after a higher one was read.
# The feed reads this many ids back below its cursor, and ``seen`` keeps it
# from telling the same row twice. SQLite writers take one lock in turn, so
# its ids appear in order.
LATE_COMMITS = 256


def changed_uris(
    after_audit: int, after_outbox: int, seen: set[tuple[str, int]] | None = None
) -> tuple[list[str], int, int]:
    """The resource uris named by audit events and outbox rows newer than the
    given ids (a decision, a revision, a retirement, a dispute, a record
    gone overdue or edited outside Vetted), and the newest ids seen. With
    ``seen`` (the caller's, kept between calls) on PostgreSQL, rows that
    committed late below the cursor are found too, each once."""
    uris: dict[str, None] = {}
    back = LATE_COMMITS if seen is not None and database_engine(connection).late_commits else 0
    seen = set() if seen is None else seen

    def note(value) -> None:
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and ids.RECORD_ID_RE.match(text):
                uris[RECORD_URI.format(id=text)] = None
            elif isinstance(text, str) and ids.PROPOSAL_ID_RE.match(text):
                uris[PROPOSAL_URI.format(id=text)] = None

    # The cursors as given: rows may come in any order (the write log's
    # default ordering is newest first), so the skip test must not read the
    # running maximum, which would pass over every row below the newest.
    audit_cursor, outbox_cursor = after_audit, after_outbox
    audit_rows = AuditEvent.objects.filter(pk__gt=after_audit - back)
    for pk, record_ref, proposal_ref, subject_id, extra in audit_rows.values_list(
        "pk", "record_ref", "proposal_ref", "subject_id", "extra"
    ):
        if ("audit", pk) in seen or (not back and pk <= audit_cursor):
            continue
        if back:
            seen.add(("audit", pk))
        after_audit = max(after_audit, pk)
        note([record_ref, proposal_ref, subject_id])
        for key in ("supersedes", "closed_proposals", "rejected_disputes", "reopened_proposals", "retired"):
            note((extra or {}).get(key))
    for pk, subject_id in OutboxEvent.objects.filter(pk__gt=after_outbox - back).values_list("pk", "subject_id"):
        if ("outbox", pk) in seen or (not back and pk <= outbox_cursor):
            continue
        if back:
            seen.add(("outbox", pk))
        after_outbox = max(after_outbox, pk)
        note(subject_id)
    if back:  # forget what can no longer come back into the window
        floors = {"audit": after_audit - back, "outbox": after_outbox - back}
        seen.difference_update({key for key in seen if key[1] <= floors[key[0]]})
    return list(uris), after_audit, after_outbox


def seen_below(after_audit: int, after_outbox: int) -> set[tuple[str, int]]:
    """The ``seen`` a feed starts with at this cursor: the rows already
    committed in its look-back window (PostgreSQL), which are old news; a row
    still in flight there is not among them, so it is told when it commits."""
    if not database_engine(connection).late_commits:
        return set()
    audit = AuditEvent.objects.filter(pk__gt=after_audit - LATE_COMMITS, pk__lte=after_audit)
    outbox = OutboxEvent.objects.filter(pk__gt=after_outbox - LATE_COMMITS, pk__lte=after_outbox)
    return {("audit", pk) for pk in audit.values_list("pk", flat=True)} | {
        ("outbox", pk) for pk in outbox.values_list("pk", flat=True)
    }


def newest_change_ids() -> tuple[int, int]:
    audit = AuditEvent.objects.aggregate(m=Max("pk"))["m"] or 0
    outbox = OutboxEvent.objects.aggregate(m=Max("pk"))["m"] or 0
    return audit, outbox
