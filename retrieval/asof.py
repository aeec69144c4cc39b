"""Search, read and list at a moment: ``as_of`` (what a reader would have
received then) and ``valid_at`` (validity windows judged on another day).

Each record's state then comes from reviews.history (the write log and the
version chain; the domain's one deliverable rule applied to it); this module
applies it for a reader the way the live gate does (retrieval/gate.py,
delivery.py): only records approved in the reader's spaces exist for it,
only records that existed at that moment are delivered or counted, and the
text delivered is the approved text, never the row's current text.

Ranking past text. The index holds every record's approved text, including
versions since superseded or retired (they sit in the withheld partitions),
and a version's approved text never changes. So a search at a moment draws
the same per-space pools as a live search, from the deliverable *and* the
withheld partitions, ranks them together with the same fusion on the
statistics of the reader's currently deliverable records (the only
statistics that depend on nothing the reader may not read), and walks that
one ranking through this gate instead of today's. What it costs: scores are
not exactly the ones an agent saw then (today's statistics, not that day's);
records approved after the moment still take places in the pools (so a deep
history may need the pools to grow before ``limit`` results pass); and each
window of candidates costs two extra queries (their events, their outbox
rows). Records not yet approved at the moment are skipped, never counted.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection
from django.utils import timezone

from reviews.errors import NotFound
from reviews.history import Moment, Past, at_moment, successor_at
from reviews.models import Record

from . import approved_content
from .delivery import Filters, Hit
from .gate import Reader, ReadResult
from .scoring import Candidate


def deliver_at(
    ranked: list[tuple[int, float]],
    candidates: dict[int, Candidate],
    reader: Reader,
    filters: Filters,
    limit: int,
    moment: Moment,
) -> tuple[list[Hit], dict[str, int]]:
    """``delivery.deliver`` at ``moment``: walk the one ranking of both pools,
    deliver what was deliverable then (as it stood then), count by reason
    what was withheld then and ranks above the last result, and surface the
    version current then in place of a superseded one."""
    results: list[Hit] = []
    delivered: set[int] = set()
    withheld: dict[str, int] = {}
    batch = max(16, limit * 2)
    for start in range(0, len(ranked), batch):
        window = ranked[start : start + batch]
        ids = [rowid for rowid, _score in window]
        rows = Record.objects.select_related("proposed_by").in_bulk(ids)
        with connection.cursor() as cursor:
            indexed = approved_content.approved_texts(cursor, ids)
        then = at_moment(rows.values(), moment)
        for rowid, score in window:
            if len(results) >= limit:
                return results, withheld
            past = then.get(rowid)
            # Not indexed, not approved yet then, no approved text left, or
            # another space: invisible to this reader, so not "withheld".
            if past is None or rowid not in indexed or past.record is None or past.space not in reader.spaces:
                continue
            if not filters.matches(past.record):
                continue
            c = candidates[rowid]
            if past.reason is None:
                if rowid not in delivered:
                    delivered.add(rowid)
                    results.append(_hit(past.record, score, c))
                continue
            withheld[past.reason] = withheld.get(past.reason, 0) + 1
            if past.reason == "superseded":
                successor = successor_at(past, moment, reader.spaces)
                if successor is not None and successor.pk not in delivered and filters.matches(successor):
                    delivered.add(successor.pk)
                    hit = _hit(successor, score, c)
                    hit.chunk_id, hit.successor_of = None, past.record.public_id
                    results.append(hit)
    return results[:limit], withheld


def _hit(record: Record, score: float, c: Candidate) -> Hit:
    return Hit(record, score, c.vector or 0.0, c.coverage, c.identifiers, chunk_id=c.chunk_id)


def read_at(public_id: str, reader: Reader, moment: Moment) -> ReadResult:
    """``gate.read_record`` at ``moment``. A record not yet approved then, or
    not approved in the reader's spaces, raises the same NotFound as an
    unknown id."""
    record = Record.objects.filter(public_id=public_id).first() if len(public_id) <= 20 else None
    past = at_moment([record], moment)[record.pk] if record is not None else None
    if record is None or past is None or past.record is None or past.space not in reader.spaces:
        raise NotFound(f"No record with id {public_id[:40]!r}{_when(moment)}.")
    if past.reason is None:
        return ReadResult(record=past.record, public_id=record.public_id)
    successor = successor_at(past, moment, reader.spaces) if past.reason == "superseded" else None
    return ReadResult(record=None, withheld=past.reason, successor=successor, public_id=record.public_id)


def _when(moment: Moment) -> str:
    return f" as of {moment.at:%Y-%m-%d %H:%M:%S %Z}" if moment.at is not None else ""


def list_at(
    reader: Reader,
    moment: Moment,
    *,
    spaces: list[str],
    kinds: list[str],
    tags_all: list[str],
    since: datetime | None = None,
    limit: int = 20,
) -> list[Record]:
    """Records deliverable at ``moment`` to ``reader`` in ``spaces`` (approved
    ones), as they stood then, newest approval first."""
    rows = Record.objects.select_related("proposed_by").order_by("-approved_at", "-pk")
    rows = rows.filter(approved_at__lte=moment.at or timezone.now())
    if since is not None:
        rows = rows.filter(approved_at__gte=since)
    wanted = set(spaces) & set(reader.spaces)
    found: list[Record] = []
    offset, page = 0, max(limit * 2, 50)
    while len(found) < limit:
        batch = list(rows[offset : offset + page])
        if not batch:
            break
        offset += page
        then = at_moment(batch, moment)
        for record in batch:
            past: Past = then[record.pk]
            shown = past.record
            if shown is None or past.reason is not None or shown.space not in wanted:
                continue
            if kinds and shown.kind not in kinds:
                continue
            if tags_all and not set(tags_all) <= set(shown.tags or []):
                continue
            found.append(shown)
            if len(found) >= limit:
                break
    return found
