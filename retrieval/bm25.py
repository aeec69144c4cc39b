"""BM25's idf as FTS5 computes it, shared by both engines (PostgreSQL's
keyword ranking reproduces FTS5's scores with it) and by scoring."""

from __future__ import annotations

import math

FLOOR_IDF = 1e-6  # FTS5's idf of a word in at least half of the documents


def bm25_idf(total: int, containing: int) -> float:
    """FTS5's own idf (fts5_aux.c): log((N - n + 0.5) / (n + 0.5)), and 1e-6
    where that is not positive (a word in more than half the documents)."""
    idf = math.log((total - containing + 0.5) / (containing + 0.5)) if total else 0.0
    return idf if idf > 0 else FLOOR_IDF
