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

Statistics. Every statistic behind a score (BM25's document count, lengths
and frequencies, the idf behind coverage) is that of the *deliverable
records of the record's own space*. So a record's score depends only on
records a reader of that space may receive: records in other spaces,
withheld records and proposals never move it, and the score is the same for
every reader who may see the record.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from django.db import connection

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
    """Per-space document counts of words among deliverable documents,
    cached per space until that space changes (its ``docs:<scope>`` token)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._spaces: dict[str, tuple[tuple, int, dict[str, int]]] = {}

    def idf(self, cursor, scope: str, words: list[str]) -> dict[str, float]:
        cursor.execute(f"SELECT value FROM {schema.META} WHERE key = %s", [f"docs:{scope}"])
        row = cursor.fetchone()
        key = (str(connection.settings_dict["NAME"]), row[0] if row else None)
        with self._lock:
            entry = self._spaces.get(scope)
        if entry is None or entry[0] != key:
            entry = (key, fts.document_count(cursor, scope), {})
            with self._lock:
                self._spaces[scope] = entry
        _key, total, counts = entry
        # Work on a local copy: another request thread may replace the shared
        # entry at any moment (a KeyError here was a 500 under `stress`).
        with self._lock:
            known = {w: counts[w] for w in words if w in counts}
        for word in words:
            if word not in known:
                known[word] = fts.document_frequency(cursor, scope, word)
        with self._lock:
            if len(counts) > 50_000:
                counts.clear()
            counts.update(known)
        n = max(total, 1)
        return {w: math.log(1 + (n - known[w] + 0.5) / (known[w] + 0.5)) for w in words}


def coverage(cursor, terms: list[str], candidates: dict[int, Candidate], state: str, docfreq: DocFreq,
             ) -> dict[int, float]:
    """idf-weighted share of the query's words each candidate contains (idf of its own space)."""
    if not terms or not candidates:
        return {}
    shares: dict[int, float] = {}
    for scope in sorted({c.scope for c in candidates.values()}):
        idf = docfreq.idf(cursor, scope, terms)
        total = sum(idf.values()) or 1.0
        ids = [rowid for rowid, c in candidates.items() if c.scope == scope]
        for rowid, found in fts.terms_in(cursor, scope, state, terms, ids).items():
            shares[rowid] = sum(idf[t] for t in found) / total
    return shares


def score(mode: str, c: Candidate) -> float:
    if mode == "semantic":
        return c.vector or 0.0
    if mode == "keyword":
        # Exact identifiers first, then BM25.
        return c.identifiers * 1000.0 + c.bm25
    return (c.vector or 0.0) + KEYWORD_WEIGHT * c.coverage ** KEYWORD_POWER + IDENT_WEIGHT * c.identifiers


def rank(mode: str, candidates: dict[int, Candidate]) -> list[tuple[int, float]]:
    scored = []
    for rowid, c in candidates.items():
        if mode == "hybrid" and not c.keyword_hit and (c.vector or 0.0) < MIN_VECTOR_ONLY:
            continue
        scored.append((rowid, score(mode, c)))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored
