"""Scoring candidates: per-space statistics, query coverage, the fused score.

Fusion. Plain rank fusion (RRF) lets keyword's weak matches on common words
count as much as a strong vector match, and "keyword score + vector score"
lets the keyword hit win rank 1 even when the vector ranker is right. Here the
keyword side contributes *evidence of exactness*, not a rank:

    hybrid = cosine(query, best chunk)
           + KEYWORD_WEIGHT * coverage ** KEYWORD_POWER
           + IDENT_WEIGHT * identifiers_matched

- coverage: the idf-weighted share of the query's content words that the
  record contains (0..1). Matching only common words gives little; matching
  every rare word of a short query gives the full weight. The fourth power
  makes partial matches count for little (half the words: 1/16 of the
  weight), which is what keeps one shared word from overruling the vector
  ranker on paraphrases.
- identifiers_matched: the share of identifier-looking query tokens
  (acme/billing-api, ACME-1234, 21.0.3, STRIPE_WEBHOOK_SECRET, --dry-run)
  that the record contains verbatim, as whole tokens.
BM25 itself is not in the hybrid score: normalised BM25 always gives the best
keyword match full marks, however weak, which is the failure described above.
So paraphrases (no shared words) rank by the vector alone, exact keyword and
identifier queries are decided by exact evidence, and questions combine both.
The weights were set on tests/data (see `manage.py eval_retrieval`).

Statistics. Every statistic behind a score (the document count and document
frequencies behind BM25 and coverage) is that of the *deliverable records of
the reader's spaces*: records in other spaces, withheld records and proposals
never move a score, and records of several spaces compare on one scale. The
keyword tables are per space (so a query never reads another space), and
FTS5 ranks each with its own statistics; keyword_evidence re-weights FTS5's
per-term scores to the reader's (term frequencies and length normalisation
stay those FTS5 computed in the record's own space).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper

from . import fts, schema

# Set on tests/data with `manage.py eval_retrieval`: hybrid rank-1 stays at or
# above the better single ranker for every query type for KEYWORD_WEIGHT in
# 0.2-0.25 and KEYWORD_POWER in 3-5 (a plateau, not a knife edge).
KEYWORD_WEIGHT = 0.25
KEYWORD_POWER = 4.0
IDENT_WEIGHT = 1.0
# A candidate found only by the vector ranker, with less similarity than this,
# is noise, not an answer (MiniLM puts unrelated texts around 0.0-0.15).
MIN_VECTOR_ONLY = 0.2


@dataclass
class Candidate:
    """One document found by at least one ranker, in one partition."""

    scope: str
    vector: float | None = None
    chunk_id: int | None = None
    bm25: float = 0.0
    coverage: float = 0.0
    identifiers: float = 0.0
    keyword_hit: bool = False


class DocFreq:
    """Per-partition document counts of words, cached per space until that
    space changes (its ``docs:<scope>`` token)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (scope, state) -> (cache key, documents, {word: documents with it})
        self._parts: dict[tuple[str, str], tuple[tuple[str, str | None], int, dict[str, int]]] = {}

    def counts(self, cursor: CursorWrapper, scope: str, state: str, words: list[str]) -> tuple[int, dict[str, int]]:
        """(documents in the partition, {word: documents containing it})."""
        cursor.execute(f"SELECT value FROM {schema.META} WHERE key = %s", [f"docs:{scope}"])
        row = cursor.fetchone()
        key = (str(connection.settings_dict["NAME"]), row[0] if row else None)
        with self._lock:
            entry = self._parts.get((scope, state))
        if entry is None or entry[0] != key:
            entry = (key, fts.document_count(cursor, scope, state), {})
            with self._lock:
                self._parts[(scope, state)] = entry
        _key, total, counts = entry
        # Work on a local copy: another request thread may replace the shared
        # entry at any moment (a KeyError here was a 500 under `stress`).
        with self._lock:
            known = {w: counts[w] for w in words if w in counts}
        for word in words:
            if word not in known:
                known[word] = fts.document_frequency(cursor, scope, state, word)
        with self._lock:
            if len(counts) > 50_000:
                counts.clear()
            counts.update(known)
        return total, known

    def idf(self, cursor: CursorWrapper, scope: str, words: list[str]) -> dict[str, float]:
        """The coverage idf of ``words`` among the deliverable documents of one space."""
        return _coverage_idf(*self.counts(cursor, scope, schema.LIVE, words), words)


def _coverage_idf(total: int, known: dict[str, int], words: list[str]) -> dict[str, float]:
    n = max(total, 1)
    return {w: math.log(1 + (n - known[w] + 0.5) / (known[w] + 0.5)) for w in words}


def keyword_evidence(
    cursor: CursorWrapper,
    terms: list[str],
    candidates: dict[int, Candidate],
    state: str,
    docfreq: DocFreq,
    reader_scopes: Iterable[str],
) -> None:
    """Fill in each candidate's coverage and (for BM25-pool candidates) its
    BM25 score, both with the statistics of the deliverable documents of the
    reader's spaces: its idf, and FTS5's own per-term scores re-weighted from
    the partition's idf to that one. So scores compare across the reader's
    spaces, and depend on nothing it cannot read."""
    if not terms or not candidates:
        return
    total, known = 0, dict[str, Any].fromkeys(terms, 0)
    for scope in reader_scopes:
        n, counts = docfreq.counts(cursor, scope, schema.LIVE, terms)
        total += n
        for term in terms:
            known[term] += counts[term]
    coverage_idf = _coverage_idf(total, known, terms)
    coverage_total = sum(coverage_idf.values()) or 1.0
    reader_idf = {t: fts.bm25_idf(total, known[t]) for t in terms}
    for scope in sorted({c.scope for c in candidates.values()}):
        n, counts = docfreq.counts(cursor, scope, state, terms)
        own_idf = {t: fts.bm25_idf(n, counts[t]) for t in terms}
        ids = [rowid for rowid, c in candidates.items() if c.scope == scope]
        for rowid, found in fts.term_scores(cursor, scope, state, terms, ids).items():
            c = candidates[rowid]
            c.coverage = sum(coverage_idf[t] for t in found) / coverage_total
            if c.bm25:
                c.bm25 = sum(score / own_idf[t] * reader_idf[t] for t, score in found.items())


def score(mode: str, c: Candidate) -> float:
    if mode == "semantic":
        return c.vector or 0.0
    if mode == "keyword":
        # Exact identifiers first, then BM25.
        return c.identifiers * 1000.0 + c.bm25
    return float((c.vector or 0.0) + KEYWORD_WEIGHT * c.coverage**KEYWORD_POWER + IDENT_WEIGHT * c.identifiers)


def rank(mode: str, candidates: dict[int, Candidate]) -> list[tuple[int, float]]:
    scored = []
    for rowid, c in candidates.items():
        if mode == "hybrid" and not c.keyword_hit and (c.vector or 0.0) < MIN_VECTOR_ONLY:
            continue
        scored.append((rowid, score(mode, c)))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored
