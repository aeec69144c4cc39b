"""Hybrid search: keyword (BM25 + exact identifiers) and vectors, fused, then gated.

The pieces, one module each: reading the query (query.py), the keyword
engine (retrieval_engine(): engines/), each ranker's candidate pool (candidates.py), statistics
and the fused score (scoring.py, which explains the fusion), delivery
through the gate (delivery.py) and access counts (access.py). This module
puts them together; its names are what callers import.

What a reader may not see changes nothing it receives. Each search:
1. reconciles the index with the records (approved_content.py: only approved text is
   indexed) and sweeps the reader's spaces for date changes;
2. draws every candidate pool from the reader's spaces only, with
   deliverable and withheld documents in separate pools, so neither
   another space nor a withheld record takes a deliverable record's place
   or makes the over-fetch loop run longer;
3. scores with the statistics of the deliverable records of the reader's
   spaces only (scoring.py);
4. re-reads every candidate row and delivers it only if the gate says so;
   withheld candidates (once approved in the reader's spaces) that rank
   above the last result are counted by reason, never shown.
So, for a given reader, the results, their scores and order are the same
whatever exists in other spaces, whatever is pending and whatever is
withheld; only the ``withheld`` counts (and a superseded record's current
successor surfacing in its place) depend on withheld records, and only on
what was approved of them, in the reader's own spaces.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.db import connection

from reviews.history import Moment
from reviews.space_access import space_slugs

from . import approved_content, asof, index, scoring, stages, tables
from .access import AccessCounter as _AccessCounter
from .access import access_counter
from .candidates import KNN_MAX, gather, nearest_chunks
from .delivery import BODY_CHUNK_OVER, Filters, Hit, attach_chunks, deliver
from .embeddings import Embedder, get_embedder
from .gate import Reader
from .query import (
    LIMIT_MAX,
    MODES,
    QUERY_MAX_CHARS,
    TERMS_MAX,
    fts_or_query,
    fts_string,
    query_identifiers,
    query_terms,
    validate,
)
from .query import whole_number as _whole_number
from .scoring import IDENT_WEIGHT, KEYWORD_POWER, KEYWORD_WEIGHT, MIN_VECTOR_ONLY
from .scoring import DocFreq as _DocFreq

__all__ = [
    "BODY_CHUNK_OVER",
    "IDENT_WEIGHT",
    "KEYWORD_POWER",
    "KEYWORD_WEIGHT",
    "LIMIT_MAX",
    "MIN_VECTOR_ONLY",
    "MODES",
    "QUERY_MAX_CHARS",
    "TERMS_MAX",
    "Filters",
    "Hit",
    "SearchResponse",
    "access_counter",
    "fts_or_query",
    "fts_string",
    "nearest_chunks",
    "query_identifiers",
    "query_terms",
    "search",
    "validate",
    "_AccessCounter",
    "_DocFreq",
    "_whole_number",
]

# Process-wide caches; tests replace them (by these names) to isolate themselves.
_docfreq = _DocFreq()


@dataclass
class SearchResponse:
    query: str
    mode: str
    results: list[Hit]
    withheld: dict[str, int]
    took_ms: float = 0.0
    moment: Moment | None = None  # as_of / valid_at (retrieval/asof.py)

    def as_dict(self) -> dict[str, Any]:
        data = {
            "query": self.query,
            "mode": self.mode,
            "results": [hit.as_dict() for hit in self.results],
            "withheld": self.withheld,
            "withheld_total": sum(self.withheld.values()),
        }
        if self.moment is not None:
            data.update(self.moment.as_dict())
        return data


def search(
    query: str,
    *,
    mode: str = "hybrid",
    filters: Filters | None = None,
    limit: int = 8,
    reader: Reader,
    embedder: Embedder | None = None,
    count_access: bool = True,
    moment: Moment | None = None,
) -> SearchResponse:
    """Search approved memory as ``reader`` may see it.

    Returns at most ``limit`` deliverable records, best first, and the
    number of withheld candidates by reason (pending proposals and text
    nobody approved are never in the index, so they can never appear or be
    counted). Pools are over-fetched and grow until ``limit`` records pass
    the gate and the filters, or the indexes run out. With ``moment``
    (as_of, valid_at), what the reader would have received then, through
    retrieval/asof.py's gate (which says how past text is ranked); an as_of
    look is not counted as an access.
    """
    query, mode, limit = validate(query, mode, limit)
    filters = filters or Filters()
    # Keyword search needs no vectors; the others load the model once per process (not timed).
    embedder = None if mode == "keyword" else embedder or get_embedder()
    started = time.perf_counter()
    clock = stages.clock()  # None unless a benchmark is timing the stages
    readable = [s for s in space_slugs() if s in reader.spaces]
    spaces = [s for s in readable if not filters.spaces or s in filters.spaces]
    approved_content.reconcile(sweep_spaces=readable)
    terms = query_terms(query)
    identifiers = query_identifiers(query)
    if clock is not None:
        clock.lap("spaces, reconcile, query terms")
    query_vector = None
    if embedder is not None:
        index.sync(embedder)  # usually a no-op: one SELECT on each empty queue
        if clock is not None:
            clock.lap("index queue check")
        query_vector = embedder.embed_one(query)
        if clock is not None:
            clock.lap("query embedding")

    k = max(64, limit * 10)
    while True:
        with connection.cursor() as cursor:
            live, more = gather(
                cursor, mode, terms, identifiers, query_vector, k, spaces, tables.LIVE, _docfreq, readable
            )
            held, _ = gather(cursor, mode, terms, identifiers, query_vector, k, spaces, tables.HELD, _docfreq, readable)
        candidates = {**held, **live}
        if moment is not None:
            ranked = scoring.rank(mode, candidates, scoring.shape(live))
            if clock is not None:
                clock.lap("fusion")
            results, withheld = asof.deliver_at(ranked, candidates, reader, filters, limit, moment)
        else:
            ranked_held = scoring.rank(mode, held, scoring.shape(live))
            ranked_live = scoring.rank(mode, live)
            if clock is not None:
                clock.lap("fusion")
            results, withheld = deliver(ranked_live, ranked_held, candidates, reader, filters, limit)
        if clock is not None:
            clock.lap("gate")
        if len(results) >= limit or not more or k >= KNN_MAX:
            break
        k = min(k * 4, KNN_MAX)

    attach_chunks(results)
    if clock is not None:
        clock.lap("best chunks of the results")
    if count_access and results and (moment is None or moment.at is None):
        access_counter.add([hit.record.pk for hit in results])
    if clock is not None:
        clock.lap("access count")
    return SearchResponse(
        query=query,
        mode=mode,
        results=results,
        withheld=withheld,
        took_ms=(time.perf_counter() - started) * 1000,
        moment=moment,
    )
