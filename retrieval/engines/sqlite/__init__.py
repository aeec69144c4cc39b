"""Retrieval on SQLite: FTS5 keyword tables per partition, sqlite-vec's vec0."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from django.db.backends.utils import CursorWrapper

from ... import tables
from ...index_meta import KNN_MAX
from ..base import RetrievalEngine
from . import ddl, keyword, upgrades


class SQLiteRetrieval(RetrievalEngine):
    name = "sqlite"

    def vector_placeholder(self) -> str:
        return "%s"  # vec0 reads raw float32 bytes

    def vector_value(self, vector: np.ndarray | bytes) -> bytes | str:
        array = np.frombuffer(vector, dtype=np.float32) if isinstance(vector, bytes) else vector.astype(np.float32)
        return np.ascontiguousarray(array, dtype=np.float32).tobytes()

    def knn(
        self, cursor: CursorWrapper, query_vector: np.ndarray, k: int, space: str, state: str
    ) -> list[tuple[int, float, int, int]]:
        # vec0: the partition key and the metadata column filter inside the KNN.
        # (vec0 quirk: SQLite flattens the subquery, and vec0 refuses any ORDER
        # BY besides its own distance order, so ties are ordered in Python.)
        cursor.execute(
            f"SELECT v.rowid, v.distance, c.record_id, c.seq FROM "
            f"(SELECT rowid, distance FROM {tables.VEC} WHERE embedding MATCH %s AND k = %s AND space = %s "
            f"AND held = %s) v JOIN {tables.CHUNKS} c ON c.id = v.rowid",
            [query_vector.astype(np.float32).tobytes(), min(k, KNN_MAX), space, int(state == tables.HELD)],
        )
        rows: list[tuple[int, float, int, int]] = cursor.fetchall()
        return rows

    def create_vector_table(self, cursor: CursorWrapper, dimension: int, spaces: Iterable[str]) -> None:
        cursor.execute(f"DROP TABLE IF EXISTS {tables.VEC}")
        cursor.execute(f"CREATE VIRTUAL TABLE {tables.VEC} USING vec0({ddl.VEC_COLUMNS.format(dimension=dimension)})")

    def keyword_candidates(
        self, cursor: CursorWrapper, space: str, state: str, terms: list[str], k: int
    ) -> dict[int, float]:
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
        return keyword.term_scores(cursor, space, state, terms, candidate_ids)

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
        for table in ddl.keyword_tables(spaces):
            cursor.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")

    def index_problems(self, cursor: CursorWrapper) -> list[str]:
        problems = []
        for table in ddl.keyword_tables(tables.current_spaces(cursor)):
            try:
                # With rank 1, FTS5 compares the index with its content (the
                # partition's view of retrieval_doc).
                cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                problems.append(f"keyword index {table} does not match the records: {exc}")
        return problems

    def upgrade(self, step: str, cursor: CursorWrapper) -> None:
        upgrades.STEPS.get(step, upgrades.nothing)(cursor)
