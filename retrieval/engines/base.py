"""What retrieval needs from a database engine, one method each.

Fusion, the gate, chunking and evaluation are shared and never see engine
SQL; they call these. Each engine's own SQL lives in its package."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from django.conf import settings
from django.db.backends.utils import CursorWrapper

from .. import tables, vectors
from ..chunks import similarity_offset


class RetrievalEngine:
    name = ""

    # ------------------------------------------------------------------ vectors

    def vector_placeholder(self) -> str:
        """The SQL parameter a vector is bound to."""
        raise NotImplementedError

    def vector_value(self, vector: np.ndarray | bytes) -> bytes | str:
        """A vector as that parameter's value."""
        raise NotImplementedError

    def nearest_chunks(
        self, cursor: CursorWrapper, query_vector: np.ndarray, k: int, space: str, state: str = tables.LIVE
    ) -> tuple[dict[int, tuple[float, int]], int]:
        """Best chunk per record among the ``k`` nearest chunks of one partition
        {record_id: (similarity, chunk_id)}, and how many chunks were considered:
        from the in-memory vector cache when it is on, else the engine's index."""
        if settings.VETTED_VECTOR_CACHE:
            snap = vectors.cache.current(cursor, space, len(query_vector))
            return vectors.nearest([snap], query_vector, k, state)
        return best_per_record(self.knn(cursor, query_vector, k, space, state))

    def knn(
        self, cursor: CursorWrapper, query_vector: np.ndarray, k: int, space: str, state: str
    ) -> list[tuple[int, float, int, int]]:
        """The ``k`` nearest chunks of one partition in the engine's vector
        index: rows (chunk id, cosine distance, record id, seq)."""
        raise NotImplementedError

    def create_vector_table(self, cursor: CursorWrapper, dimension: int, spaces: Iterable[str]) -> None:
        """The vector table (and index) for ``dimension``, empty."""
        raise NotImplementedError

    # ------------------------------------------------------------------ keyword ranking

    def keyword_candidates(
        self, cursor: CursorWrapper, space: str, state: str, terms: list[str], k: int
    ) -> dict[int, float]:
        """The ``k`` best BM25 matches of any of ``terms`` in one partition {rowid: bm25}."""
        raise NotImplementedError

    def identifier_candidates(
        self, cursor: CursorWrapper, space: str, state: str, identifier: str, k: int
    ) -> list[int]:
        """Up to ``k`` documents of one partition containing ``identifier`` as a substring."""
        raise NotImplementedError

    def document_count(self, cursor: CursorWrapper, space: str, state: str = tables.LIVE) -> int:
        """Documents in one partition (the N of its idf)."""
        raise NotImplementedError

    def document_frequency(self, cursor: CursorWrapper, space: str, state: str, term: str) -> int:
        """Documents of one partition that contain ``term`` (stemmed as indexed)."""
        raise NotImplementedError

    def term_scores(
        self, cursor: CursorWrapper, space: str, state: str, terms: list[str], candidate_ids: list[int]
    ) -> dict[int, dict[str, float]]:
        """{rowid: {term: bm25 of the one-term query}} for ``candidate_ids`` of one partition."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the index tables

    def prepare_database(self, cursor: CursorWrapper) -> None:
        """What the database needs before the tables (extensions)."""

    def create_all(self, cursor: CursorWrapper) -> None:
        """Every table, partition and trigger; queues the records already there."""
        raise NotImplementedError

    def drop_all(self) -> list[str]:
        """Statements that remove everything create_all made (migration 0001 backwards)."""
        raise NotImplementedError

    def ensure_partitions(self, cursor: CursorWrapper, spaces: Iterable[str] | None = None) -> list[str]:
        """Make the index triggers and every current space's partitions (or
        those of ``spaces`` besides); idempotent. Returns the spaces."""
        raise NotImplementedError

    def index_triggers(self) -> dict[str, str]:
        """{name: CREATE statement} of the index triggers."""
        raise NotImplementedError

    def drop_keyword(self, spaces: Iterable[str]) -> list[str]:
        """Statements that drop the keyword indexes of ``spaces`` and the triggers (reindex)."""
        raise NotImplementedError

    def rebuild_keyword(self, cursor: CursorWrapper, spaces: Iterable[str]) -> None:
        """Fill the keyword indexes of ``spaces`` again from the approved content (after create_all)."""
        raise NotImplementedError

    def index_problems(self, cursor: CursorWrapper) -> list[str]:
        """What is wrong with the keyword indexes themselves, one sentence each."""
        raise NotImplementedError

    def upgrade(self, step: str, cursor: CursorWrapper) -> None:
        """Migration ``step`` of retrieval's tables on this engine (nothing
        when the engine's first layout already has it)."""


def best_per_record(rows: list[tuple[int, float, int, int]]) -> tuple[dict[int, tuple[float, int]], int]:
    """{record_id: (similarity, chunk_id)} of its best chunk from KNN rows
    (chunk id, cosine distance, record id, seq): each chunk's similarity with
    its offset (a body-only vector counts BODY_MARGIN less, chunks.py)."""
    rows = sorted(rows, key=lambda row: (row[1], row[0]))
    best: dict[int, tuple[float, int]] = {}
    for chunk_id, distance, record_id, seq in rows:
        similarity = 1.0 - float(distance) + similarity_offset(seq)  # cosine distance -> similarity
        if record_id not in best or similarity > best[record_id][0]:
            best[record_id] = (similarity, chunk_id)
    return best, len(rows)
