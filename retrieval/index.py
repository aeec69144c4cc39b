"""Keeping the vector index in step with the approved content.

The keyword indexes follow retrieval_doc through SQL triggers, and
retrieval_doc follows the records through ``approved_content.reconcile()`` (tables.py,
approved_content.py). Vectors need the model, so the retrieval_doc triggers only enqueue
record ids in retrieval_dirty and ``sync()`` drains that queue: it splits each
document's *approved* text into chunks, embeds only chunks whose text hash
changed, and writes chunk rows and vectors in one short transaction per batch.
Embedding happens outside the transaction, so writers are never blocked
behind the model.

sqlite-vec notes (0.1.x):
- vec0 rejects INSERT OR REPLACE on an existing rowid ("UNIQUE constraint
  failed on ... primary key"): always DELETE, then INSERT.
- DELETE on vec0 does not give disk space back; `reindex` drops the table.
- vec0 KNN needs `k = ?` (or LIMIT) in the same query as `MATCH`, and k is
  capped at 4096 per query.
- A `partition key` column (space) makes a KNN with `space = ?` scan only
  that partition, and a metadata column (held) filters inside the KNN, so
  withheld chunks never take a place among the k nearest; `space IN (...)`
  returns k rows *per partition*. Partition keys cannot be UPDATEd (delete
  and insert instead); metadata columns can.
- Vectors go in as raw little-endian float32 bytes (numpy ``tobytes()``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from dbengine import database_engine

from . import approved_content, tables, vectors
from .chunks import BODY_SEQ as BODY_SEQ
from .chunks import CHUNK_CHARS as CHUNK_CHARS
from .chunks import chunk_texts as chunk_texts
from .chunks import split_body as split_body
from .chunks import text_hash as text_hash
from .chunks import vector_texts as vector_texts
from .embeddings import Embedder
from .engines import retrieval_engine
from .index_check import IndexReport as IndexReport
from .index_check import check as check
from .index_meta import KNN_MAX as KNN_MAX
from .index_meta import SCHEMA_VERSION as SCHEMA_VERSION
from .index_meta import read_meta as read_meta
from .index_meta import vec_table_exists as vec_table_exists
from .index_meta import write_meta as _write_meta

log = logging.getLogger(__name__)

# 3: each record also has one body-only vector (BODY_SEQ); an index of an
# older version is re-queued whole by ensure_ready(), which embeds only the
# new vectors (the title+body chunks keep theirs: their text hashes match).


class IndexModelMismatch(Exception):
    """The vectors on disk were made by another model than the configured one."""


def ensure_ready(embedder: Embedder) -> None:
    """Create the vector table for ``embedder`` on first use; refuse a model change.

    Raises IndexModelMismatch with the command to run when the index was
    built with another model or dimension. An index of an older
    SCHEMA_VERSION gets every document queued again, so this sync embeds
    what the new version adds (unchanged chunks keep their vectors).
    """
    meta = read_meta()
    model, dimension = meta.get("model_name"), meta.get("dimension")
    if model is not None:
        if model != embedder.name or int(dimension or 0) != embedder.dimension:
            raise IndexModelMismatch(
                f"The search index was built with the embedding model {model!r} ({dimension} dimensions), "
                f"but the configured model is {embedder.name!r} ({embedder.dimension} dimensions). "
                "Run `python manage.py reindex` to rebuild the vectors with the configured model."
            )
        if meta.get("schema_version") != SCHEMA_VERSION:
            with transaction.atomic(), connection.cursor() as cursor:
                _queue_everything(cursor)
                _write_meta(cursor, schema_version=SCHEMA_VERSION)
        return
    with transaction.atomic(), connection.cursor() as cursor:
        # Two daemons starting on a new database: one creates the table, the
        # other waits here and then finds it made (one daemon per SQLite file).
        database_engine(cursor).wait_turn(cursor, "vetted-vector-table")
        if read_meta().get("model_name") is not None:
            return ensure_ready(embedder)
        _create_vec_table(cursor, embedder)


def _create_vec_table(cursor: CursorWrapper, embedder: Embedder) -> None:
    retrieval_engine(cursor).create_vector_table(cursor, int(embedder.dimension), tables.current_spaces(cursor))
    # Every chunk must be re-embedded: the queue gets every document.
    cursor.execute(f"DELETE FROM {tables.CHUNKS}")
    _queue_everything(cursor)
    _write_meta(cursor, schema_version=SCHEMA_VERSION, model_name=embedder.name, dimension=embedder.dimension)
    vectors.renew_tokens(cursor, tables.current_spaces(cursor), base=True)


def _queue_everything(cursor: CursorWrapper) -> None:
    cursor.execute(
        f"INSERT INTO {tables.DIRTY} (record_id) SELECT id FROM {tables.DOCS} WHERE true "
        "ON CONFLICT (record_id) DO UPDATE SET gen = retrieval_dirty.gen + 1"
    )


# --------------------------------------------------------------------------- chunks

# (what gets embedded lives in chunks.py)


# --------------------------------------------------------------------------- sync


@dataclass
class SyncStats:
    records: int = 0
    embedded: int = 0
    reused: int = 0
    removed: int = 0
    skipped: list[int] = field(default_factory=list)


def pending_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {tables.DIRTY}")
        return int(cursor.fetchone()[0])


def sync(embedder: Embedder, *, batch: int = 64, progress: Callable[[int], None] | None = None) -> SyncStats:
    """Reconcile the approved content, then drain the vector queue until it is empty.

    One drain at a time per process (approved_content.writer_lock): the daemon's request
    threads all call sync() before searching, and without the lock concurrent
    requests embedded the same queued records side by side (measured under
    `manage.py stress`). A waiting thread then finds the queue empty. Other
    processes are handled by the generation check below.
    """
    with approved_content.writer_lock:
        started = time.monotonic()
        approved_content.reconcile()
        stats = _sync(embedder, batch=batch, progress=progress)
    if stats.records or stats.skipped:
        log.info(
            "index sync: %d record(s), %d chunk(s) embedded, %d reused, %d removed, %d skipped in %d ms",
            stats.records,
            stats.embedded,
            stats.reused,
            stats.removed,
            len(stats.skipped),
            (time.monotonic() - started) * 1000,
        )
    return stats


def _sync(embedder: Embedder, *, batch: int, progress: Callable[[int], None] | None) -> SyncStats:
    ensure_ready(embedder)
    stats = SyncStats()
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT d.record_id, d.gen, r.title, r.body, r.tags, r.space FROM {tables.DIRTY} d "
                f"LEFT JOIN {tables.DOCS} r ON r.id = d.record_id ORDER BY d.record_id LIMIT %s",
                [batch],
            )
            rows = cursor.fetchall()
            if not rows:
                return stats
            ids = [row[0] for row in rows]
            marks = ",".join(["%s"] * len(ids))
            cursor.execute(
                f"SELECT record_id, seq, id, text_hash, space, embedding FROM {tables.CHUNKS} "
                f"WHERE record_id IN ({marks})",
                ids,
            )
            existing: dict[int, dict[int, tuple[int, str, str]]] = {}
            # A record's own stored vectors by text hash: a chunk whose text is
            # unchanged but whose seq or space is (a section inserted above it, a
            # move) takes its vector from here instead of the model. Only the
            # record's own: a vector found in another record would make this
            # sync's time say whether that text exists elsewhere.
            own: dict[int, dict[str, bytes]] = {}
            for record_id, seq, chunk_id, digest, space, blob in cursor.fetchall():
                existing.setdefault(record_id, {})[seq] = (chunk_id, digest, space)
                if blob is not None and len(blob) == 4 * embedder.dimension:
                    own.setdefault(record_id, {})[digest] = bytes(blob)

        # Plan outside any transaction: which chunks need a new vector.
        # (record id, queue generation, space, [(seq, text, digest, source)]), where source is
        # an index into to_embed, a stored vector of the record to copy, or None (keep the row);
        # space and the list are None for a record with no approved content.
        plans: list[tuple[int, int, str | None, list[tuple[int, str, str, int | bytes | None]] | None]] = []
        to_embed: list[str] = []
        for record_id, gen, title, body, tags, space in rows:
            if title is None:  # no approved content (any more)
                plans.append((record_id, gen, None, None))
                continue
            texts = vector_texts(title, body, json.loads(tags) if isinstance(tags, str) else tags)
            planned: list[tuple[int, str, str, int | bytes | None]] = []
            for seq, text in texts:
                digest = text_hash(embedder.name, text)
                stored = existing.get(record_id, {}).get(seq)
                if stored and stored[1] == digest and stored[2] == space:
                    planned.append((seq, text, digest, None))  # keep the stored vector
                elif digest in own.get(record_id, {}):
                    planned.append((seq, text, digest, own[record_id][digest]))  # copy it to a new row
                else:
                    planned.append((seq, text, digest, len(to_embed)))
                    to_embed.append(text)
            plans.append((record_id, gen, space, planned))
        new_vectors = embedder.embed(to_embed) if to_embed else None

        # PostgreSQL (several daemons): FOR UPDATE holds the queue row, so a
        # daemon syncing the same record waits here, then finds it gone and
        # skips it (SQLite's BEGIN IMMEDIATE already lets one writer in).
        hold = database_engine(connection).row_lock
        with transaction.atomic(), connection.cursor() as cursor:
            engine = retrieval_engine(cursor)
            touched: set[str] = set()
            reload: set[str] = set()
            # Before any chunk row: the spaces' token rows, whose locks (held
            # to COMMIT) make another sync of these spaces wait, so each space's
            # chunk ids commit in id order (retrieval/vectors.py appends by id).
            spaces = {space for _id, _gen, space, _plan in plans if space is not None}
            spaces |= {old for chunks in existing.values() for _chunk, _digest, old in chunks.values()}
            vectors.renew_tokens(cursor, spaces, base=False)
            for record_id, gen, space, plan in plans:
                cursor.execute(f"SELECT gen FROM {tables.DIRTY} WHERE record_id = %s{hold}", [record_id])
                current = cursor.fetchone()
                if current is None or current[0] != gen:
                    # Another process synced it, or it changed again meanwhile
                    # (then it is still queued and the next round takes it).
                    stats.skipped.append(record_id)
                    continue
                # The state is read here, under the write lock, so a state
                # change by reconcile() meanwhile cannot be missed.
                cursor.execute(f"SELECT state FROM {tables.DOCS} WHERE id = %s", [record_id])
                state = cursor.fetchone()
                held = int(state is None or state[0] == tables.HELD)
                old_chunks = existing.get(record_id, {})
                keep = {seq for seq, *_rest in plan or []}
                for seq, (chunk_id, _digest, old_space) in old_chunks.items():
                    if seq not in keep:
                        cursor.execute(f"DELETE FROM {tables.VEC} WHERE rowid = %s", [chunk_id])
                        cursor.execute(f"DELETE FROM {tables.CHUNKS} WHERE id = %s", [chunk_id])
                        stats.removed += 1
                        reload.add(old_space)
                for seq, text, digest, vector_index in plan or []:
                    if vector_index is None:
                        stats.reused += 1
                        continue
                    # A planned chunk belongs to a record with approved content (so a space),
                    # and a chunk to embed means the batch was embedded.
                    assert space is not None and (isinstance(vector_index, bytes) or new_vectors is not None)
                    previous = old_chunks.get(seq)
                    if previous:
                        cursor.execute(f"DELETE FROM {tables.VEC} WHERE rowid = %s", [previous[0]])
                        cursor.execute(f"DELETE FROM {tables.CHUNKS} WHERE id = %s", [previous[0]])
                        stats.removed += 1
                        reload.add(previous[2])
                    if isinstance(vector_index, bytes):
                        blob = vector_index
                        stats.reused += 1
                    else:
                        assert new_vectors is not None
                        blob = np.ascontiguousarray(new_vectors[vector_index], dtype=np.float32).tobytes()
                        stats.embedded += 1
                    # RETURNING, not lastrowid: psycopg has no lastrowid (SQLite 3.35+ has RETURNING).
                    cursor.execute(
                        f"INSERT INTO {tables.CHUNKS} (record_id, seq, text_hash, text, embedding, space) "
                        "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                        [record_id, seq, digest, text, blob, space],
                    )
                    chunk_id = cursor.fetchone()[0]
                    cursor.execute(
                        f"INSERT INTO {tables.VEC} (rowid, space, held, embedding) "
                        f"VALUES (%s, %s, %s, {engine.vector_placeholder()})",
                        [chunk_id, space, held, engine.vector_value(blob)],
                    )
                    touched.add(space)
                cursor.execute(f"DELETE FROM {tables.DIRTY} WHERE record_id = %s AND gen = %s", [record_id, gen])
                stats.records += 1
            # Any deleted chunk row (removed, or replaced by a re-embedded
            # one) means in-memory copies of that space must reload, not
            # just append.
            vectors.renew_tokens(cursor, reload, base=True)
            vectors.renew_tokens(cursor, touched - reload, base=False)
        if progress:
            progress(len(rows))
        if stats.skipped and len(stats.skipped) >= len(rows) and all(r[0] in stats.skipped for r in rows):
            # Everything in this batch was taken by someone else or re-queued;
            # avoid spinning on rows another process is about to finish.
            return stats


def reindex(embedder: Embedder, *, progress: Callable[[int], None] | None = None) -> SyncStats:
    """Rebuild everything with ``embedder``: the triggers (if missing), both
    keyword indexes from the approved content, the approved content from the
    records (every record is reconciled again; an edited record keeps the
    approved text on file, as nothing else holds it), and all vectors."""
    with approved_content.writer_lock:
        with transaction.atomic(), connection.cursor() as cursor:
            spaces = tables.current_spaces(cursor)
            engine = retrieval_engine(cursor)
            for sql in engine.drop_keyword(spaces):
                cursor.execute(sql)
            engine.create_all(cursor)  # re-queues every record, re-makes every space's partitions
            engine.rebuild_keyword(cursor, spaces)
            cursor.execute(f"DELETE FROM {tables.META} WHERE key LIKE 'swept_on:%%'")
        with transaction.atomic(), connection.cursor() as cursor:
            _create_vec_table(cursor, embedder)
        return sync(embedder, progress=progress)
