"""Exact nearest-neighbour search over all chunk vectors, in memory.

vec0 (sqlite-vec 0.1.x, PyPI build) scans without SIMD: about 0.8 us per
384-dim vector, so 11 ms per query at 10k records and ~110 ms at 100k. The
same exact cosine search as one float32 matrix-vector product in numpy costs
about 1 ms at 10k. So searches use this cache, and vec0 stays the durable,
SQL-queryable vector index (check_index compares both with the chunk table;
VETTED_VECTOR_CACHE=0 searches through vec0 instead).

The matrix is loaded from the vector copies in retrieval_chunk and follows
changes through two random tokens in retrieval_meta that every index write
renews in its own transaction: ``vectors_token`` on any change, and
``vectors_base`` when chunks were deleted or the table rebuilt. Same base,
new token: only chunks with a higher id are appended (ids only grow). New
base: full reload. Random tokens, not counters, so a rolled-back write can
never make an old cache look current.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

import numpy as np
from django.db import connection

from . import schema


def renew_tokens(cursor, *, base: bool) -> None:
    """Mark the vectors changed (call inside the transaction that changed them)."""
    keys = ["vectors_token", "vectors_base"] if base else ["vectors_token"]
    for key in keys:
        cursor.execute(
            f"INSERT INTO {schema.META} (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, secrets.token_hex(8)],
        )


@dataclass(frozen=True)
class _Snapshot:
    database: str
    base: str | None
    token: str | None
    max_id: int
    chunk_ids: np.ndarray  # int64, ascending
    record_ids: np.ndarray  # int64
    matrix: np.ndarray  # float32, rows are unit vectors


_EMPTY = np.zeros((0,), dtype=np.int64)


class VectorCache:
    def __init__(self):
        self._lock = threading.Lock()
        self._snap: _Snapshot | None = None

    def current(self, cursor, dimension: int) -> _Snapshot:
        cursor.execute(f"SELECT key, value FROM {schema.META} WHERE key IN ('vectors_base', 'vectors_token')")
        tokens = dict(cursor.fetchall())
        base, token = tokens.get("vectors_base"), tokens.get("vectors_token")
        database = str(connection.settings_dict["NAME"])
        snap = self._snap
        if snap and (snap.database, snap.base, snap.token) == (database, base, token):
            return snap
        with self._lock:
            snap = self._snap
            if snap and (snap.database, snap.base, snap.token) == (database, base, token):
                return snap
            if snap and (snap.database, snap.base) == (database, base) and snap.matrix.shape[1:] == (dimension,):
                snap = self._append(cursor, snap, token)
            else:
                snap = self._load(cursor, database, base, token, dimension)
            self._snap = snap
            return snap

    def _rows(self, cursor, after_id: int, dimension: int):
        cursor.execute(
            f"SELECT id, record_id, embedding FROM {schema.CHUNKS} WHERE id > %s AND embedding IS NOT NULL ORDER BY id",
            [after_id],
        )
        rows = [row for row in cursor.fetchall() if len(row[2]) == 4 * dimension]
        chunk_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        record_ids = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        matrix = (np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), dimension)
                  if rows else np.zeros((0, dimension), dtype=np.float32))
        return chunk_ids, record_ids, matrix

    def _load(self, cursor, database, base, token, dimension) -> _Snapshot:
        chunk_ids, record_ids, matrix = self._rows(cursor, 0, dimension)
        max_id = int(chunk_ids[-1]) if len(chunk_ids) else 0
        return _Snapshot(database, base, token, max_id, chunk_ids, record_ids, matrix)

    def _append(self, cursor, snap: _Snapshot, token) -> _Snapshot:
        chunk_ids, record_ids, matrix = self._rows(cursor, snap.max_id, snap.matrix.shape[1])
        if not len(chunk_ids):
            return _Snapshot(snap.database, snap.base, token, snap.max_id, snap.chunk_ids, snap.record_ids, snap.matrix)
        return _Snapshot(
            snap.database, snap.base, token, int(chunk_ids[-1]),
            np.concatenate([snap.chunk_ids, chunk_ids]), np.concatenate([snap.record_ids, record_ids]),
            np.concatenate([snap.matrix, matrix]),
        )


cache = VectorCache()


def nearest(snap: _Snapshot, query_vector: np.ndarray, k: int) -> tuple[dict[int, tuple[float, int]], int]:
    """Best chunk per record among the ``k`` most similar chunks: {record_id:
    (similarity, chunk_id)}, and how many chunks were considered."""
    n = len(snap.chunk_ids)
    if n == 0:
        return {}, 0
    similarities = snap.matrix @ query_vector.astype(np.float32)
    k = min(k, n)
    top = np.argpartition(-similarities, k - 1)[:k] if k < n else np.arange(n)
    best: dict[int, tuple[float, int]] = {}
    for i in top[np.argsort(-similarities[top])]:
        record_id = int(snap.record_ids[i])
        if record_id not in best:
            best[record_id] = (float(similarities[i]), int(snap.chunk_ids[i]))
    return best, k


def best_for(snap: _Snapshot, record_ids: list[int], query_vector: np.ndarray) -> dict[int, tuple[float, int]]:
    """Best chunk similarity for the given records."""
    if not record_ids or not len(snap.chunk_ids):
        return {}
    mask = np.isin(snap.record_ids, np.asarray(record_ids, dtype=np.int64))
    rows = np.nonzero(mask)[0]
    if not len(rows):
        return {}
    similarities = snap.matrix[rows] @ query_vector.astype(np.float32)
    best: dict[int, tuple[float, int]] = {}
    for row, similarity in zip(rows, similarities, strict=True):
        record_id = int(snap.record_ids[row])
        if record_id not in best or similarity > best[record_id][0]:
            best[record_id] = (float(similarity), int(snap.chunk_ids[row]))
    return best
