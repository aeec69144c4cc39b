"""The candidate pools of each ranker: keyword (BM25), exact identifiers and
nearest vectors, drawn per space and per state.

Every query here reads only the partitions it is given: the reader's spaces,
and either the deliverable (``live``) or the withheld (``held``) documents.
So what a reader may not see never takes a place in its pools, and the work
done (and the time taken) depends only on the spaces it may read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np
from django.conf import settings
from django.db.backends.utils import CursorWrapper

from . import approved_content, stages, tables, vectors
from .bm25 import FLOOR_IDF, bm25_idf
from .chunks import similarity_offset
from .engines import retrieval_engine
from .index_meta import KNN_MAX as KNN_MAX
from .query import contains_identifier
from .scoring import Candidate, DocFreq, keyword_evidence


def nearest_chunks(
    cursor: CursorWrapper,
    query_vector: np.ndarray,
    k: int,
    space: str,
    state: str = tables.LIVE,
) -> tuple[dict[int, tuple[float, int]], int]:
    """Best chunk per record among the ``k`` nearest chunks of one partition
    {record_id: (similarity, chunk_id)}, and how many chunks were considered."""
    return retrieval_engine(cursor).nearest_chunks(cursor, query_vector, k, space, state)


def vectors_for(
    cursor: CursorWrapper, space: str, record_ids: list[int], query_vector: np.ndarray
) -> dict[int, tuple[float, int]]:
    """Best-chunk similarity for records of one space the KNN did not return (keyword-only hits)."""
    if not record_ids:
        return {}
    if settings.VETTED_VECTOR_CACHE:
        return vectors.best_for([vectors.cache.current(cursor, space, len(query_vector))], record_ids, query_vector)
    marks = ",".join(["%s"] * len(record_ids))
    cursor.execute(
        f"SELECT record_id, id, embedding, seq FROM {tables.CHUNKS} WHERE record_id IN ({marks})", record_ids
    )
    best: dict[int, tuple[float, int]] = {}
    for record_id, chunk_id, blob, seq in cursor.fetchall():
        if blob is None:
            continue
        similarity = float(np.dot(np.frombuffer(blob, dtype=np.float32), query_vector)) + similarity_offset(seq)
        if record_id not in best or similarity > best[record_id][0]:
            best[record_id] = (similarity, chunk_id)
    return best


def _verified_identifiers(
    cursor: CursorWrapper, found: dict[int, set[str]], identifiers: list[str]
) -> dict[int, float]:
    """Trigram MATCH finds substrings; keep identifiers that stand as whole
    tokens in the approved text."""
    shares = {}
    for rowid, (title, body, tags, _kind, _space) in approved_content.approved_texts(cursor, list(found)).items():
        text = f"{title}\n{body}\n{tags}"
        matched = sum(1 for ident in found[rowid] if contains_identifier(text, ident))
        if matched:
            shares[rowid] = matched / len(identifiers)
    return shares


def _keyword_pool(
    cursor: CursorWrapper, space: str, state: str, terms: list[str], k: int, docfreq: DocFreq, *, rescored: bool
) -> dict[int, float]:
    """The ``k`` best BM25 matches of one partition. A term in at least half
    of the partition's documents has BM25's floor idf (1e-6, bm25.py): it adds
    at most idf * (k1 + 1) = 2.2e-6 to any score, yet ranking every
    document that holds it can be most of the pool's cost (on the synthetic
    10,000-record corpus, "who owns the billing api and how often is it
    deployed?" in the team space: 11.7 ms of CPU with "owns", which 78% of its
    documents hold, 3.8 ms without). When
    the scores are re-weighted afterwards (``rescored``: keyword_evidence
    scores each candidate from every term), the pool is drawn with the other
    terms, and with all of them again if that finds fewer than ``k``; so the
    pool differs only between documents whose scores tie to within that.
    The counts are the partition's own (DocFreq), as FTS5's are."""
    engine = retrieval_engine(cursor)
    if rescored and len(terms) > 1:
        total, counts = docfreq.counts(cursor, space, state, terms)
        telling = [t for t in terms if bm25_idf(total, counts[t]) > FLOOR_IDF]
        if telling and len(telling) < len(terms):
            pool = engine.keyword_candidates(cursor, space, state, telling, k)
            if len(pool) >= k:
                return pool
    return engine.keyword_candidates(cursor, space, state, terms, k)


def gather(
    cursor: CursorWrapper,
    mode: str,
    terms: list[str],
    identifiers: list[str],
    query_vector: np.ndarray | None,
    k: int,
    spaces: Iterable[str],
    state: str,
    docfreq: DocFreq,
    reader_spaces: Collection[str],
) -> tuple[dict[int, Candidate], bool]:
    """Candidates from each ranker (at most ``k`` each, per space) among the
    documents of ``spaces`` in ``state``, scored with the statistics of
    ``reader_spaces``, and whether any pool may have more."""
    candidates: dict[int, Candidate] = {}
    more = False
    # keyword_evidence below re-scores every keyword candidate from each term's own score.
    rescored = mode == "hybrid" or (mode == "keyword" and len(reader_spaces) > 1)
    clock = stages.clock()  # None unless a benchmark is timing the stages
    for space in spaces:
        if mode in ("keyword", "hybrid"):
            keyword = _keyword_pool(cursor, space, state, terms, k, docfreq, rescored=rescored)
            more |= len(keyword) >= k
            for rowid, bm25 in keyword.items():
                c = candidates.setdefault(rowid, Candidate(space))
                c.bm25, c.keyword_hit = bm25, True
            if clock is not None:
                clock.lap("keyword pool (BM25)")
            found: dict[int, set[str]] = {}
            for ident in identifiers:
                rows = retrieval_engine(cursor).identifier_candidates(cursor, space, state, ident, k)
                more |= len(rows) >= k
                for rowid in rows:
                    found.setdefault(rowid, set()).add(ident)
            for rowid, share in _verified_identifiers(cursor, found, identifiers).items():
                c = candidates.setdefault(rowid, Candidate(space))
                c.identifiers, c.keyword_hit = share, True
            if clock is not None:
                clock.lap("keyword pool (identifiers)")
        if mode in ("semantic", "hybrid"):
            assert query_vector is not None  # search embeds the query for every mode but keyword
            nearest, considered = nearest_chunks(cursor, query_vector, k, space, state)
            more |= considered >= min(k, KNN_MAX)
            for rowid, (similarity, chunk_id) in nearest.items():
                c = candidates.setdefault(rowid, Candidate(space))
                c.vector, c.chunk_id, c.knn = similarity, chunk_id, True
            if clock is not None:
                clock.lap("vector pool (nearest)")
        if mode == "hybrid":
            assert query_vector is not None
            missing = [rowid for rowid, c in candidates.items() if c.space == space and c.vector is None]
            for rowid, (similarity, chunk_id) in vectors_for(cursor, space, missing, query_vector).items():
                candidates[rowid].vector, candidates[rowid].chunk_id = similarity, chunk_id
            if clock is not None:
                clock.lap("vector pool (keyword-only hits)")
    # Keyword mode needs the re-weighting only to compare several spaces' BM25
    # on one scale: with one space, FTS5's own statistics are the reader's.
    if rescored:
        keyword_evidence(cursor, terms, candidates, state, docfreq, reader_spaces)
    if clock is not None:
        clock.lap("statistics")
    return candidates, more
