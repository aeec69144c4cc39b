"""Keeping the vector index in step with the record table.

The keyword indexes are maintained by SQL triggers (schema.py). Vectors need
the model, so the triggers only enqueue record ids in retrieval_dirty and
``sync()`` drains that queue: it splits each record into chunks, embeds only
chunks whose text hash changed, and writes chunk rows and vectors in one short
transaction per batch. Embedding happens outside the transaction, so writers
are never blocked behind the model.

sqlite-vec notes (0.1.x):
- vec0 rejects INSERT OR REPLACE on an existing rowid ("UNIQUE constraint
  failed on ... primary key"): always DELETE, then INSERT.
- DELETE on vec0 does not give disk space back; `reindex` drops the table.
- vec0 KNN needs `k = ?` (or LIMIT) in the same query as `MATCH`, and k is
  capped at 4096 per query.
- Vectors go in as raw little-endian float32 bytes (numpy ``tobytes()``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction

from . import schema, vectors
from .embeddings import Embedder

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
CHUNK_CHARS = 900  # MiniLM reads at most 256 word pieces (~1000 characters)
KNN_MAX = 4096  # sqlite-vec's cap on k


class IndexModelMismatch(Exception):
    """The vectors on disk were made by another model than the configured one."""


# --------------------------------------------------------------------------- meta


def read_meta() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, value FROM {schema.META}")
        return dict(cursor.fetchall())


def _write_meta(cursor, **values) -> None:
    for key, value in values.items():
        cursor.execute(
            f"INSERT INTO {schema.META} (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, str(value)],
        )


def vec_table_exists(cursor) -> bool:
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [schema.VEC])
    return cursor.fetchone() is not None


def ensure_ready(embedder: Embedder) -> None:
    """Create the vector table for ``embedder`` on first use; refuse a model change.

    Raises IndexModelMismatch with the command to run when the index was
    built with another model or dimension.
    """
    meta = read_meta()
    model, dimension = meta.get("model_name"), meta.get("dimension")
    if model is not None:
        if model != embedder.name or int(dimension) != embedder.dimension:
            raise IndexModelMismatch(
                f"The search index was built with the embedding model {model!r} ({dimension} dimensions), "
                f"but the configured model is {embedder.name!r} ({embedder.dimension} dimensions). "
                "Run `python manage.py reindex` to rebuild the vectors with the configured model."
            )
        return
    with transaction.atomic(), connection.cursor() as cursor:
        _create_vec_table(cursor, embedder)


def _create_vec_table(cursor, embedder: Embedder) -> None:
    cursor.execute(f"DROP TABLE IF EXISTS {schema.VEC}")
    cursor.execute(
        f"CREATE VIRTUAL TABLE {schema.VEC} USING vec0("
        f"embedding float[{int(embedder.dimension)}] distance_metric=cosine)"
    )
    # Every chunk must be re-embedded: the queue gets every record.
    cursor.execute(f"DELETE FROM {schema.CHUNKS}")
    cursor.execute(
        f"INSERT INTO {schema.DIRTY} (record_id) SELECT id FROM {schema.RECORD_TABLE} WHERE true "
        "ON CONFLICT (record_id) DO UPDATE SET gen = gen + 1"
    )
    _write_meta(cursor, schema_version=SCHEMA_VERSION, model_name=embedder.name, dimension=embedder.dimension)
    vectors.renew_tokens(cursor, base=True)


# --------------------------------------------------------------------------- chunks


_HEADING_RE = re.compile(r"^#{1,6}\s")


def split_body(body: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split Markdown into chunks of at most ~``limit`` characters.

    Headings start a new chunk and stay with the text under them; paragraphs
    are packed together up to the limit; an over-long paragraph is cut at
    sentence ends (or hard, as a last resort).
    """
    # A heading right under a line of text is valid Markdown: give it its
    # own block like one preceded by a blank line.
    body = re.sub(r"\n(?=#{1,6}\s)", "\n\n", body.strip())
    blocks: list[str] = []
    for block in re.split(r"\n\s*\n", body):
        block = block.strip()
        if not block:
            continue
        if len(block) <= limit:
            blocks.append(block)
            continue
        piece = ""
        for sentence in re.split(r"(?<=[.!?])\s+|\n", block):
            while len(sentence) > limit:
                if piece:
                    blocks.append(piece)
                    piece = ""
                blocks.append(sentence[:limit])
                sentence = sentence[limit:]
            if piece and len(piece) + 1 + len(sentence) > limit:
                blocks.append(piece)
                piece = sentence
            else:
                piece = f"{piece} {sentence}".strip()
        if piece:
            blocks.append(piece)
    chunks: list[str] = []
    current = ""
    for block in blocks:
        starts_section = bool(_HEADING_RE.match(block))
        if current and (starts_section or len(current) + 2 + len(block) > limit):
            chunks.append(current)
            current = block
        else:
            current = f"{current}\n\n{block}" if current else block
    if current:
        chunks.append(current)
    return chunks or [""]


def chunk_texts(title: str, body: str, tags: list[str] | None = None) -> list[str]:
    """What gets embedded for a record: each chunk, prefixed with the title
    (and the tags on the first chunk) so a chunk keeps its context."""
    texts = []
    for i, chunk in enumerate(split_body(body)):
        head = title
        if i == 0 and tags:
            head = f"{title} ({', '.join(tags)})"
        texts.append(f"{head}\n\n{chunk}".strip())
    return texts


def text_hash(model_name: str, text: str) -> str:
    return hashlib.sha256(f"{model_name}\0{text}".encode()).hexdigest()


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
        cursor.execute(f"SELECT count(*) FROM {schema.DIRTY}")
        return cursor.fetchone()[0]


# One drain at a time per process: the daemon's request threads all call
# sync() before searching, and without this, concurrent requests embedded the
# same queued records side by side (measured under `manage.py stress`). A
# waiting thread then finds the queue empty. Other processes are still
# handled by the generation check below.
_sync_lock = threading.Lock()


def sync(embedder: Embedder, *, batch: int = 64, progress: Callable[[int], None] | None = None) -> SyncStats:
    """Drain the queue of changed records until it is empty."""
    with _sync_lock:
        started = time.monotonic()
        stats = _sync(embedder, batch=batch, progress=progress)
    if stats.records or stats.skipped:
        log.info("index sync: %d record(s), %d chunk(s) embedded, %d reused, %d removed, %d skipped in %d ms",
                 stats.records, stats.embedded, stats.reused, stats.removed, len(stats.skipped),
                 (time.monotonic() - started) * 1000)
    return stats


def _sync(embedder: Embedder, *, batch: int, progress: Callable[[int], None] | None) -> SyncStats:
    ensure_ready(embedder)
    stats = SyncStats()
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT d.record_id, d.gen, r.title, r.body, r.tags FROM {schema.DIRTY} d "
                f"LEFT JOIN {schema.RECORD_TABLE} r ON r.id = d.record_id ORDER BY d.record_id LIMIT %s",
                [batch],
            )
            rows = cursor.fetchall()
            if not rows:
                return stats
            ids = [row[0] for row in rows]
            marks = ",".join(["%s"] * len(ids))
            cursor.execute(f"SELECT record_id, seq, id, text_hash FROM {schema.CHUNKS} WHERE record_id IN ({marks})", ids)
            existing: dict[int, dict[int, tuple[int, str]]] = {}
            for record_id, seq, chunk_id, digest in cursor.fetchall():
                existing.setdefault(record_id, {})[seq] = (chunk_id, digest)

        # Plan outside any transaction: which chunks need a new vector.
        plans = []
        to_embed: list[str] = []
        for record_id, gen, title, body, tags in rows:
            if title is None:  # the record is gone
                plans.append((record_id, gen, None))
                continue
            texts = chunk_texts(title, body, json.loads(tags) if isinstance(tags, str) else tags)
            planned = []
            for seq, text in enumerate(texts):
                digest = text_hash(embedder.name, text)
                old = existing.get(record_id, {}).get(seq)
                if old and old[1] == digest:
                    planned.append((seq, text, digest, None))  # keep the stored vector
                else:
                    planned.append((seq, text, digest, len(to_embed)))
                    to_embed.append(text)
            plans.append((record_id, gen, planned))
        new_vectors = embedder.embed(to_embed) if to_embed else None

        with transaction.atomic(), connection.cursor() as cursor:
            embedded, removed = stats.embedded, stats.removed  # this batch's changes, below
            for record_id, gen, planned in plans:
                cursor.execute(f"SELECT gen FROM {schema.DIRTY} WHERE record_id = %s", [record_id])
                current = cursor.fetchone()
                if current is None or current[0] != gen:
                    # Another process synced it, or it changed again meanwhile
                    # (then it is still queued and the next round takes it).
                    stats.skipped.append(record_id)
                    continue
                old = existing.get(record_id, {})
                keep = len(planned) if planned else 0
                for seq, (chunk_id, _digest) in old.items():
                    if seq >= keep:
                        cursor.execute(f"DELETE FROM {schema.VEC} WHERE rowid = %s", [chunk_id])
                        cursor.execute(f"DELETE FROM {schema.CHUNKS} WHERE id = %s", [chunk_id])
                        stats.removed += 1
                for seq, text, digest, vector_index in planned or []:
                    if vector_index is None:
                        stats.reused += 1
                        continue
                    previous = old.get(seq)
                    if previous:
                        cursor.execute(f"DELETE FROM {schema.VEC} WHERE rowid = %s", [previous[0]])
                        cursor.execute(f"DELETE FROM {schema.CHUNKS} WHERE id = %s", [previous[0]])
                        stats.removed += 1
                    blob = np.ascontiguousarray(new_vectors[vector_index], dtype=np.float32).tobytes()
                    cursor.execute(
                        f"INSERT INTO {schema.CHUNKS} (record_id, seq, text_hash, text, embedding) "
                        "VALUES (%s, %s, %s, %s, %s)",
                        [record_id, seq, digest, text, blob],
                    )
                    chunk_id = cursor.lastrowid
                    cursor.execute(f"INSERT INTO {schema.VEC} (rowid, embedding) VALUES (%s, %s)", [chunk_id, blob])
                    stats.embedded += 1
                cursor.execute(f"DELETE FROM {schema.DIRTY} WHERE record_id = %s AND gen = %s", [record_id, gen])
                stats.records += 1
            if stats.embedded != embedded or stats.removed != removed:
                # Any deleted chunk row (removed, or replaced by a re-embedded
                # one) means in-memory copies must reload, not just append.
                vectors.renew_tokens(cursor, base=stats.removed != removed)
        if progress:
            progress(len(rows))
        if stats.skipped and len(stats.skipped) >= len(rows) and all(r[0] in stats.skipped for r in rows):
            # Everything in this batch was taken by someone else or re-queued;
            # avoid spinning on rows another process is about to finish.
            return stats


def reindex(embedder: Embedder, *, progress: Callable[[int], None] | None = None) -> SyncStats:
    """Rebuild everything with ``embedder``: the sync triggers (if missing),
    both keyword indexes and all vectors."""
    with transaction.atomic(), connection.cursor() as cursor:
        for sql in schema.TRIGGERS.values():  # (CREATE ... IF NOT EXISTS)
            cursor.execute(sql)
        cursor.execute(f"INSERT INTO {schema.FTS}({schema.FTS}) VALUES ('rebuild')")
        cursor.execute(f"INSERT INTO {schema.FTS_IDENT}({schema.FTS_IDENT}) VALUES ('rebuild')")
        _create_vec_table(cursor, embedder)
    return sync(embedder, progress=progress)


# --------------------------------------------------------------------------- check


@dataclass
class IndexReport:
    model: str | None = None
    dimension: int | None = None
    records: int = 0
    chunks: int = 0
    vectors: int = 0
    queued: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check(embedder: Embedder | None = None) -> IndexReport:
    """Compare both indexes with the record table; list every discrepancy.

    ``embedder`` (optional) lets stale chunk hashes be detected too: text
    whose hash under the configured model differs from the stored one.
    """
    report = IndexReport()
    meta = read_meta()
    report.model = meta.get("model_name")
    report.dimension = int(meta["dimension"]) if "dimension" in meta else None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {schema.RECORD_TABLE}")
        report.records = cursor.fetchone()[0]
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        triggers = {row[0] for row in cursor.fetchall()}
        for name in schema.TRIGGERS:
            if name not in triggers:
                report.problems.append(f"trigger {name} is missing: the indexes no longer follow the records "
                                       "(`python manage.py reindex` restores it and rebuilds them)")
        for table in (schema.FTS, schema.FTS_IDENT):
            try:
                # With rank 1, FTS5 compares the index with the content table.
                cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                report.problems.append(f"keyword index {table} does not match the records: {exc}")
        cursor.execute(f"SELECT count(*) FROM {schema.DIRTY}")
        report.queued = cursor.fetchone()[0]
        if report.queued:
            report.problems.append(f"{report.queued} record(s) changed but not yet embedded (queued)")
        if embedder is not None and report.model is not None and report.model != embedder.name:
            report.problems.append(f"vectors were made with {report.model!r}, the configured model is {embedder.name!r}")
        if report.model is None:
            if report.records:
                report.problems.append(f"no vector index yet: {report.records} record(s) without vectors")
            return report
        if not vec_table_exists(cursor):
            report.problems.append(f"vector table {schema.VEC} is missing")
            return report
        cursor.execute(f"SELECT count(*) FROM {schema.CHUNKS}")
        report.chunks = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(*) FROM {schema.VEC}")
        report.vectors = cursor.fetchone()[0]
        cursor.execute(
            f"SELECT r.public_id FROM {schema.RECORD_TABLE} r WHERE NOT EXISTS "
            f"(SELECT 1 FROM {schema.CHUNKS} c WHERE c.record_id = r.id) "
            f"AND r.id NOT IN (SELECT record_id FROM {schema.DIRTY}) LIMIT 20"
        )
        missing = [row[0] for row in cursor.fetchall()]
        if missing:
            report.problems.append(f"records without vectors: {', '.join(missing)}")
        cursor.execute(
            f"SELECT count(*) FROM {schema.CHUNKS} c WHERE NOT EXISTS "
            f"(SELECT 1 FROM {schema.RECORD_TABLE} r WHERE r.id = c.record_id)"
        )
        orphans = cursor.fetchone()[0]
        if orphans:
            report.problems.append(f"{orphans} chunk(s) belong to no record")
        cursor.execute(f"SELECT id FROM {schema.CHUNKS} EXCEPT SELECT rowid FROM {schema.VEC}")
        no_vector = [row[0] for row in cursor.fetchall()]
        if no_vector:
            report.problems.append(f"{len(no_vector)} chunk(s) without a vector")
        cursor.execute(f"SELECT count(*) FROM {schema.CHUNKS} WHERE embedding IS NULL OR length(embedding) != %s",
                       [4 * (report.dimension or 0)])
        bad_copy = cursor.fetchone()[0]
        if bad_copy:
            report.problems.append(f"{bad_copy} chunk(s) without a usable vector copy")
        cursor.execute(f"SELECT rowid FROM {schema.VEC} EXCEPT SELECT id FROM {schema.CHUNKS}")
        stray = [row[0] for row in cursor.fetchall()]
        if stray:
            report.problems.append(f"{len(stray)} vector(s) without a chunk")
        model_name = embedder.name if embedder is not None else report.model
        cursor.execute(
            f"SELECT r.id, r.public_id, r.title, r.body, r.tags FROM {schema.RECORD_TABLE} r "
            f"WHERE r.id NOT IN (SELECT record_id FROM {schema.DIRTY})"
        )
        records = cursor.fetchall()
        cursor.execute(f"SELECT record_id, seq, text_hash FROM {schema.CHUNKS} ORDER BY record_id, seq")
        stored: dict[int, list[str]] = {}
        for record_id, _seq, digest in cursor.fetchall():
            stored.setdefault(record_id, []).append(digest)
        stale = []
        for record_id, public_id, title, body, tags in records:
            expected = [text_hash(model_name, t) for t in chunk_texts(title, body, json.loads(tags))]
            if record_id in stored and stored[record_id] != expected:
                stale.append(public_id)
        if stale:
            report.problems.append(f"stale vectors (text changed since embedding): {', '.join(stale[:20])}"
                                   + (f" and {len(stale) - 20} more" if len(stale) > 20 else ""))
    return report
