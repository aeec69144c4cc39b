"""Retrieval on PostgreSQL: a weighted tsvector with BM25 from a term table,
pg_trgm for identifiers, pgvector's HNSW per space."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from django.db.backends.utils import CursorWrapper

from ... import tables
from ..base import RetrievalEngine
from . import ddl, keyword, terms, upgrades


class PostgresRetrieval(RetrievalEngine):
    name = "postgres"

    def vector_placeholder(self) -> str:
        # A '[x,y,...]' literal cast to vector (no client-side adapter needed).
        return "%s::vector"

    def vector_value(self, vector: np.ndarray | bytes) -> bytes | str:
        array = np.frombuffer(vector, dtype=np.float32) if isinstance(vector, bytes) else vector.astype(np.float32)
        # repr of a float32 round-trips exactly through pgvector's float4 parser.
        return "[" + ",".join(repr(float(x)) for x in array) + "]"

    def knn(
        self, cursor: CursorWrapper, query_vector: np.ndarray, k: int, space: str, state: str
    ) -> list[tuple[int, float, int, int]]:
        """pgvector's HNSW index of one space: ``space`` as a literal, so the
        planner can use that space's partial index; ``held`` is filtered during
        the scan (hnsw.iterative_scan, dbengine/postgres), so withheld
        chunks never take a place among the k nearest. The KNN runs in a
        subquery of its own so the join cannot keep the index out."""
        vector = self.vector_value(query_vector)
        cursor.execute(
            f"SELECT v.rowid, v.distance, c.record_id, c.seq FROM (SELECT rowid, embedding <=> %s::vector AS distance "
            f"FROM {tables.VEC} WHERE space = '{tables.literal(space)}' AND held = %s "
            "ORDER BY embedding <=> %s::vector LIMIT %s) v "
            f"JOIN {tables.CHUNKS} c ON c.id = v.rowid",
            [vector, int(state == tables.HELD), vector, k],
        )
        rows: list[tuple[int, float, int, int]] = cursor.fetchall()
        return rows

    def create_vector_table(self, cursor: CursorWrapper, dimension: int, spaces: Iterable[str]) -> None:
        for sql in ddl.vec_table(dimension, spaces):
            cursor.execute(sql)

    def keyword_candidates(
        self, cursor: CursorWrapper, space: str, state: str, terms: list[str], k: int
    ) -> dict[int, float]:
        if not terms:
            return {}
        return keyword.keyword_candidates(cursor, space, state, terms, k)

    def identifier_candidates(
        self, cursor: CursorWrapper, space: str, state: str, identifier: str, k: int
    ) -> list[int]:
        return keyword.identifier_candidates(cursor, space, state, identifier, k)

    def document_count(self, cursor: CursorWrapper, space: str, state: str = tables.LIVE) -> int:
        return keyword.document_count(cursor, space, state)

    def document_frequency(self, cursor: CursorWrapper, space: str, state: str, term: str) -> int:
        return keyword.document_frequency(cursor, space, state, term)

    def term_scores(
        self, cursor: CursorWrapper, space: str, state: str, terms: list[str], candidate_ids: list[int]
    ) -> dict[int, dict[str, float]]:
        if not terms or not candidate_ids:
            return {}
        return keyword.term_scores(cursor, space, state, terms, candidate_ids)

    def prepare_database(self, cursor: CursorWrapper) -> None:
        ddl.create_extensions(cursor)

    def create_all(self, cursor: CursorWrapper) -> None:
        ddl.create_all(cursor)

    def drop_all(self) -> list[str]:
        return ddl.DROP

    def ensure_partitions(self, cursor: CursorWrapper, spaces: Iterable[str] | None = None) -> list[str]:
        return ddl.ensure_partitions(cursor, spaces)

    def index_triggers(self) -> dict[str, str]:
        return ddl.TRIGGERS

    def drop_keyword(self, spaces: Iterable[str]) -> list[str]:
        return ddl.drop_keyword(spaces)

    def rebuild_keyword(self, cursor: CursorWrapper, spaces: Iterable[str]) -> None:
        # The tsvector is a generated column: its GIN indexes are made anew by create_all.
        return None

    def index_problems(self, cursor: CursorWrapper) -> list[str]:
        # The keyword index is a generated column: it cannot drift; the term
        # rows BM25 reads from are kept by a trigger, and can.
        wrong = terms.drift(cursor)
        if wrong:
            return [
                f"{wrong} keyword term row(s) do not match the indexed text (`python manage.py reindex` rebuilds them)"
            ]
        return []

    def upgrade(self, step: str, cursor: CursorWrapper) -> None:
        upgrades.STEPS.get(step, upgrades.nothing)(cursor)
