"""Exact nearest-neighbour search over chunk vectors, in memory, one matrix per space.

vec0 (sqlite-vec 0.1.x, PyPI build) scans without SIMD: about 0.8 us per
384-dim vector, so 11 ms per query at 10k records and ~110 ms at 100k. The
same exact cosine search as one float32 matrix-vector product in numpy costs
about 1 ms at 10k. So searches use this cache, and vec0 stays the durable,
SQL-queryable vector index (check_index compares both with the chunk table;
VETTED_VECTOR_CACHE=0 searches through vec0 instead).

One snapshot per space, so a query multiplies only the vectors of
the spaces its reader may read, and a change in one space never reloads
another's. Each snapshot knows which rows belong to withheld documents
(state ``held`` in retrieval_doc), so deliverable and withheld chunks are
ranked apart: withheld ones never push deliverable ones out of the k nearest.

A snapshot follows changes through random tokens in retrieval_meta, renewed
in the transaction that made the change: ``vectors_token:<space>`` on any
chunk change, ``vectors_base:<space>`` when chunks were deleted or the table
rebuilt, ``docs:<space>`` when a document's state changed (the engines' DDL's
triggers). Same base, new token: only chunks with a higher id are appended
(ids only grow). New base: full reload. New docs token: the withheld mask is
recomputed. Random tokens, not counters, so a rolled-back write can never make
an old cache look current.

Appending relies on two things. A space's chunks commit in id order: a sync
renews the space's token first, which holds that row's lock until it commits
(on PostgreSQL, two daemons' syncs otherwise committed ids 100 and 101 in the
order 101, 100, and a reader between them never appended 100; SQLite has one
writer). And no process-wide snapshot holds rows that never committed: a
snapshot read inside a transaction that renewed the space's tokens itself
stays with that connection until the transaction ends (rolled back, SQLite
reuses the ids, and the rows appended later under them were never read).
"""

from __future__ import annotations

import functools
import secrets
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import threadpoolctl
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from . import tables
from .chunks import similarity_offset


def renew_tokens(cursor: CursorWrapper, spaces: Iterable[str], *, base: bool) -> None:
    """Mark the vectors of ``spaces`` changed (call inside the transaction that
    changed them). In sorted order: the first call of a sync takes the rows'
    locks, and two syncs take them in the same order."""
    names = ["vectors_token", "vectors_base"] if base else ["vectors_token"]
    written = _uncommitted(cursor.db)
    for space in sorted(spaces):
        for name in names:
            value = secrets.token_hex(8)
            cursor.execute(
                f"INSERT INTO {tables.META} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [f"{name}:{space}", value],
            )
            if cursor.db.in_atomic_block:
                written.tokens.add(value)


@dataclass
class _Uncommitted:
    """One connection's tokens written in its open transaction, and its
    snapshots of that transaction's own rows (never in the shared cache)."""

    tokens: set[str] = field(default_factory=set)
    snaps: dict[str, _Snapshot] = field(default_factory=dict)


def _uncommitted(db: BaseDatabaseWrapper) -> _Uncommitted:
    """``db``'s uncommitted state; emptied once no transaction is open (the
    tokens then committed or rolled back, and a random token never recurs)."""
    state = _UNCOMMITTED.get(db)
    if state is None or (not db.in_atomic_block and (state.tokens or state.snaps)):
        state = _UNCOMMITTED[db] = _Uncommitted()
    return state


# Per connection, so per thread (Django's connections are thread-local).
_UNCOMMITTED: weakref.WeakKeyDictionary[BaseDatabaseWrapper, _Uncommitted] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Snapshot:
    database: str
    space: str
    base: str | None
    token: str | None
    docs: str | None
    max_id: int
    chunk_ids: np.ndarray  # int64, ascending
    record_ids: np.ndarray  # int64
    matrix: np.ndarray  # float32, rows are unit vectors
    offsets: np.ndarray  # float32 per row, added to its similarity (chunks.similarity_offset)
    held: np.ndarray  # bool per row: the chunk's document is withheld
    held_rows: np.ndarray  # indices of those rows

    @classmethod
    def build(
        cls,
        database: str,
        space: str,
        base: str | None,
        token: str | None,
        docs: str | None,
        chunk_ids: np.ndarray,
        record_ids: np.ndarray,
        matrix: np.ndarray,
        offsets: np.ndarray,
        held: np.ndarray,
    ) -> _Snapshot:
        """A snapshot of these rows, with the fields derived from them (the
        highest chunk id, the next append's starting point, and the held rows)
        computed in one place for a full load and an append alike."""
        max_id = int(chunk_ids[-1]) if len(chunk_ids) else 0
        return cls(
            database,
            space,
            base,
            token,
            docs,
            max_id,
            chunk_ids,
            record_ids,
            matrix,
            offsets,
            held,
            np.nonzero(held)[0],
        )

    def rows(self, state: str) -> np.ndarray | None:
        """Row indices of documents in ``state`` (None: every row)."""
        if state == tables.HELD:
            return self.held_rows
        return np.nonzero(~self.held)[0] if len(self.held_rows) else None


class VectorCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snaps: dict[str, _Snapshot] = {}

    def current(self, cursor: CursorWrapper, space: str, dimension: int) -> _Snapshot:
        keys = [f"vectors_base:{space}", f"vectors_token:{space}", f"docs:{space}"]
        cursor.execute(f"SELECT key, value FROM {tables.META} WHERE key IN (%s, %s, %s)", keys)
        tokens = dict(cursor.fetchall())
        base, token, docs = (tokens.get(key) for key in keys)
        database = str(connection.settings_dict["NAME"])
        wanted = (database, base, token, docs)
        snap = self._snaps.get(space)
        if snap and (snap.database, snap.base, snap.token, snap.docs) == wanted:
            return snap
        own = _uncommitted(cursor.db)
        if base in own.tokens or token in own.tokens:
            # This transaction's own rows: read them whole, kept for this
            # connection only (exact match, never appended to).
            snap = own.snaps.get(space)
            if not (snap and (snap.database, snap.base, snap.token, snap.docs) == wanted):
                snap = own.snaps[space] = self._load(cursor, database, space, base, token, docs, dimension)
            return snap
        with self._lock:
            snap = self._snaps.get(space)
            if snap and (snap.database, snap.base, snap.token, snap.docs) == wanted:
                return snap
            if snap and (snap.database, snap.base) == (database, base) and snap.matrix.shape[1:] == (dimension,):
                snap = self._append(cursor, snap, token, docs)
            else:
                snap = self._load(cursor, database, space, base, token, docs, dimension)
            self._snaps[space] = snap
            return snap

    def forget(self) -> None:
        """Drop every snapshot (the next search of each space loads it whole)."""
        with self._lock:
            self._snaps.clear()
        _UNCOMMITTED.pop(connections[DEFAULT_DB_ALIAS], None)

    def _rows(
        self, cursor: CursorWrapper, space: str, after_id: int, dimension: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        cursor.execute(
            f"SELECT id, record_id, embedding, seq FROM {tables.CHUNKS} WHERE space = %s AND id > %s "
            "AND embedding IS NOT NULL ORDER BY id",
            [space, after_id],
        )
        rows = [row for row in cursor.fetchall() if len(row[2]) == 4 * dimension]
        chunk_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        record_ids = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.fromiter((similarity_offset(r[3]) for r in rows), dtype=np.float32, count=len(rows))
        matrix = (
            np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), dimension)
            if rows
            else np.zeros((0, dimension), dtype=np.float32)
        )
        return chunk_ids, record_ids, matrix, offsets

    def _held(self, cursor: CursorWrapper, space: str, record_ids: np.ndarray) -> np.ndarray:
        cursor.execute(f"SELECT id FROM {tables.DOCS} WHERE space = %s AND state = %s", [space, tables.HELD])
        held = np.fromiter((row[0] for row in cursor.fetchall()), dtype=np.int64)
        return np.isin(record_ids, held)

    def _load(
        self,
        cursor: CursorWrapper,
        database: str,
        space: str,
        base: str | None,
        token: str | None,
        docs: str | None,
        dimension: int,
    ) -> _Snapshot:
        chunk_ids, record_ids, matrix, offsets = self._rows(cursor, space, 0, dimension)
        held = self._held(cursor, space, record_ids)
        return _Snapshot.build(database, space, base, token, docs, chunk_ids, record_ids, matrix, offsets, held)

    def _append(self, cursor: CursorWrapper, snap: _Snapshot, token: str | None, docs: str | None) -> _Snapshot:
        chunk_ids, record_ids, matrix, offsets = self._rows(cursor, snap.space, snap.max_id, snap.matrix.shape[1])
        if len(chunk_ids):
            chunk_ids = np.concatenate([snap.chunk_ids, chunk_ids])
            record_ids = np.concatenate([snap.record_ids, record_ids])
            matrix = np.concatenate([snap.matrix, matrix])
            offsets = np.concatenate([snap.offsets, offsets])
        else:
            chunk_ids, record_ids, matrix, offsets = snap.chunk_ids, snap.record_ids, snap.matrix, snap.offsets
        held = (
            self._held(cursor, snap.space, record_ids)
            if (docs != snap.docs or len(record_ids) != len(snap.held))
            else snap.held
        )
        return _Snapshot.build(
            snap.database, snap.space, snap.base, token, docs, chunk_ids, record_ids, matrix, offsets, held
        )


cache = VectorCache()


@functools.cache
def _one_blas_thread() -> None:
    """One BLAS thread for the process's numpy. A query's product with a
    space's matrix (10,000 records: 21,000 chunks, 32 MB) is bound by memory,
    not arithmetic: OpenBLAS's second thread only spins beside the first. On
    the 2-core machine at a load of 10: 5.5 ms of CPU and 17-21 ms wall with
    one thread, 8.7 ms of CPU and 19-27 ms wall with two; and the spinning
    thread takes a core from the daemon's other requests. (The embedding
    model runs on ONNX Runtime's or torch's own threads, not these.)"""
    threadpoolctl.threadpool_limits(1, user_api="blas")


def nearest(
    snaps: list[_Snapshot],
    query_vector: np.ndarray,
    k: int,
    state: str,
) -> tuple[dict[int, tuple[float, int]], int]:
    """Best chunk per record among the ``k`` most similar chunks of documents
    in ``state`` across ``snaps``: {record_id: (similarity, chunk_id)}, and
    how many chunks were considered."""
    _one_blas_thread()
    query = query_vector.astype(np.float32)
    pools = []
    for snap in snaps:
        rows = snap.rows(state)
        if rows is None:  # nothing withheld in this space: every row, no copy
            similarities, ids, records = snap.matrix @ query + snap.offsets, snap.chunk_ids, snap.record_ids
        elif not len(rows):
            continue
        else:
            similarities = (
                snap.matrix[rows] @ query if state == tables.HELD else (snap.matrix @ query)[rows]
            ) + snap.offsets[rows]
            ids, records = snap.chunk_ids[rows], snap.record_ids[rows]
        if not len(similarities):
            continue
        take = min(k, len(similarities))
        top = (
            np.argpartition(-similarities, take - 1)[:take]
            if take < len(similarities)
            else np.arange(len(similarities))
        )
        pools.append((similarities[top], ids[top], records[top]))
    if not pools:
        return {}, 0
    similarities = np.concatenate([p[0] for p in pools])
    chunk_ids = np.concatenate([p[1] for p in pools])
    record_ids = np.concatenate([p[2] for p in pools])
    order = np.lexsort((chunk_ids, -similarities))[:k]
    best: dict[int, tuple[float, int]] = {}
    for i in order:
        record_id = int(record_ids[i])
        if record_id not in best:
            best[record_id] = (float(similarities[i]), int(chunk_ids[i]))
    return best, len(order)


def best_for(snaps: list[_Snapshot], record_ids: list[int], query_vector: np.ndarray) -> dict[int, tuple[float, int]]:
    """Best chunk similarity for the given records."""
    best: dict[int, tuple[float, int]] = {}
    if not record_ids:
        return best
    _one_blas_thread()
    wanted = np.asarray(record_ids, dtype=np.int64)
    query = query_vector.astype(np.float32)
    for snap in snaps:
        rows = np.nonzero(np.isin(snap.record_ids, wanted))[0]
        if not len(rows):
            continue
        similarities = snap.matrix[rows] @ query + snap.offsets[rows]
        for row, similarity in zip(rows, similarities, strict=True):
            record_id = int(snap.record_ids[row])
            if record_id not in best or similarity > best[record_id][0]:
                best[record_id] = (float(similarity), int(snap.chunk_ids[row]))
    return best
