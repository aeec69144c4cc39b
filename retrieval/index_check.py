"""check_index: compare the approved content, both keyword indexes and the
vectors with the record table; list every discrepancy (read-only)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.db import connection
from django.db.backends.utils import CursorWrapper

from dbengine import database_engine
from reviews.checksum import content_checksum

from . import tables
from .chunks import text_hash, vector_texts
from .embeddings import Embedder
from .engines import retrieval_engine
from .index_meta import SCHEMA_VERSION, read_meta, vec_table_exists


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


def _listed(ids: list[str], limit: int = 20) -> str:
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def check(embedder: Embedder | None = None) -> IndexReport:
    """Compare the indexes with the record table; list every discrepancy.

    ``embedder`` (optional) lets stale chunk hashes be detected too: text
    whose hash under the configured model differs from the stored one.
    """
    report = IndexReport()
    meta = read_meta()
    report.model = meta.get("model_name")
    report.dimension = int(meta["dimension"]) if "dimension" in meta else None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {tables.RECORD_TABLE}")
        report.records = cursor.fetchone()[0]
        triggers = database_engine(cursor).trigger_names(cursor)
        engine = retrieval_engine(cursor)
        for name in engine.index_triggers():
            if name not in triggers:
                report.problems.append(
                    f"trigger {name} is missing: the indexes no longer follow the records "
                    "(`python manage.py reindex` restores it and rebuilds them)"
                )
        report.problems.extend(engine.index_problems(cursor))
        cursor.execute(f"SELECT count(*) FROM {tables.QUEUE}")
        waiting = cursor.fetchone()[0]
        if waiting:
            report.problems.append(f"{waiting} record(s) changed but not yet reconciled into the index (queued)")
        _check_documents(cursor, report)
        cursor.execute(f"SELECT count(*) FROM {tables.DIRTY}")
        report.queued = cursor.fetchone()[0] + waiting
        if report.queued - waiting:
            report.problems.append(f"{report.queued - waiting} record(s) changed but not yet embedded (queued)")
        if embedder is not None and report.model is not None and report.model != embedder.name:
            report.problems.append(
                f"vectors were made with {report.model!r}, the configured model is {embedder.name!r}"
            )
        if report.model is None:
            cursor.execute(f"SELECT count(*) FROM {tables.DOCS}")
            indexed = cursor.fetchone()[0]
            if indexed:
                report.problems.append(f"no vector index yet: {indexed} record(s) without vectors")
            return report
        if not vec_table_exists(cursor):
            report.problems.append(f"vector table {tables.VEC} is missing")
            return report
        if meta.get("schema_version") != SCHEMA_VERSION:
            # Every chunk list would read as stale: say what it is instead.
            report.problems.append(
                f"the vector index is of version {meta.get('schema_version')}, this code makes version "
                f"{SCHEMA_VERSION}: the next sync (`check_index --sync`) embeds what is missing"
            )
            return report
        _check_vectors(cursor, report, embedder.name if embedder is not None else report.model)
    return report


def _check_documents(cursor: CursorWrapper, report: IndexReport) -> None:
    """Every record whose text matches its checksum has exactly that text
    indexed; an edited one keeps at most its approved text; none other."""
    cursor.execute(
        f"SELECT r.id, r.public_id, r.kind, r.space, r.title, r.body, r.tags, r.approved_checksum, "
        f"d.space, d.title, d.body, d.tags, d.checksum, d.edited FROM {tables.RECORD_TABLE} r "
        f"LEFT JOIN {tables.DOCS} d ON d.id = r.id WHERE r.id NOT IN (SELECT record_id FROM {tables.QUEUE})"
    )
    missing, stale = [], []
    for (
        _id,
        public_id,
        kind,
        space,
        title,
        body,
        tags,
        approved,
        d_space,
        d_title,
        d_body,
        d_tags,
        d_checksum,
        d_edited,
    ) in cursor.fetchall():
        verified = content_checksum(kind=kind, space=space, title=title, body=body, tags=json.loads(tags)) == approved
        if verified and d_checksum is None:
            missing.append(public_id)
        elif verified and (d_space, d_title, d_body, json.loads(d_tags)) != (space, title, body, json.loads(tags)):
            stale.append(public_id)
        elif not verified and d_checksum is not None and (d_checksum != approved or not d_edited):
            stale.append(public_id)  # an edit the index missed (a trigger was missing)
    if missing:
        report.problems.append(f"records missing from the keyword index: {_listed(missing)}")
    if stale:
        report.problems.append(f"records whose indexed text is not their approved text: {_listed(stale)}")
    cursor.execute(
        f"SELECT count(*) FROM {tables.DOCS} d WHERE NOT EXISTS "
        f"(SELECT 1 FROM {tables.RECORD_TABLE} r WHERE r.id = d.id) "
        f"AND d.id NOT IN (SELECT record_id FROM {tables.QUEUE})"
    )
    orphans = cursor.fetchone()[0]
    if orphans:
        report.problems.append(f"{orphans} indexed document(s) belong to no record")


def _check_vectors(cursor: CursorWrapper, report: IndexReport, model_name: str) -> None:
    cursor.execute(f"SELECT count(*) FROM {tables.CHUNKS}")
    report.chunks = cursor.fetchone()[0]
    cursor.execute(f"SELECT count(*) FROM {tables.VEC}")
    report.vectors = cursor.fetchone()[0]
    cursor.execute(
        f"SELECT r.public_id FROM {tables.DOCS} d JOIN {tables.RECORD_TABLE} r ON r.id = d.id WHERE NOT EXISTS "
        f"(SELECT 1 FROM {tables.CHUNKS} c WHERE c.record_id = d.id) "
        f"AND d.id NOT IN (SELECT record_id FROM {tables.DIRTY}) LIMIT 20"
    )
    missing = [row[0] for row in cursor.fetchall()]
    if missing:
        report.problems.append(f"records without vectors: {', '.join(missing)}")
    cursor.execute(
        f"SELECT count(*) FROM {tables.CHUNKS} c WHERE NOT EXISTS "
        f"(SELECT 1 FROM {tables.DOCS} d WHERE d.id = c.record_id) "
        f"AND c.record_id NOT IN (SELECT record_id FROM {tables.DIRTY})"
    )
    orphans = cursor.fetchone()[0]
    if orphans:
        report.problems.append(f"{orphans} chunk(s) belong to no record")
    cursor.execute(f"SELECT id FROM {tables.CHUNKS} EXCEPT SELECT rowid FROM {tables.VEC}")
    no_vector = [row[0] for row in cursor.fetchall()]
    if no_vector:
        report.problems.append(f"{len(no_vector)} chunk(s) without a vector")
    cursor.execute(
        f"SELECT count(*) FROM {tables.CHUNKS} WHERE embedding IS NULL OR length(embedding) != %s",
        [4 * (report.dimension or 0)],
    )
    bad_copy = cursor.fetchone()[0]
    if bad_copy:
        report.problems.append(f"{bad_copy} chunk(s) without a usable vector copy")
    cursor.execute(f"SELECT rowid FROM {tables.VEC} EXCEPT SELECT id FROM {tables.CHUNKS}")
    stray = [row[0] for row in cursor.fetchall()]
    if stray:
        report.problems.append(f"{len(stray)} vector(s) without a chunk")
    # vec0's partition and state columns must match the documents.
    cursor.execute(
        f"SELECT count(*) FROM {tables.VEC} v JOIN {tables.CHUNKS} c ON c.id = v.rowid "
        f"JOIN {tables.DOCS} d ON d.id = c.record_id "
        "WHERE v.space <> d.space OR v.held <> CASE WHEN d.state = %s THEN 1 ELSE 0 END",
        [tables.HELD],
    )
    misfiled = cursor.fetchone()[0]
    if misfiled:
        report.problems.append(f"{misfiled} vector(s) filed under the wrong space or state")
    cursor.execute(
        f"SELECT d.id, r.public_id, d.title, d.body, d.tags FROM {tables.DOCS} d "
        f"JOIN {tables.RECORD_TABLE} r ON r.id = d.id WHERE d.id NOT IN (SELECT record_id FROM {tables.DIRTY})"
    )
    documents = cursor.fetchall()
    cursor.execute(f"SELECT record_id, seq, text_hash FROM {tables.CHUNKS} ORDER BY record_id, seq")
    stored: dict[int, dict[int, str]] = {}
    for record_id, seq, digest in cursor.fetchall():
        stored.setdefault(record_id, {})[seq] = digest
    stale = []
    for record_id, public_id, title, body, tags in documents:
        expected = {seq: text_hash(model_name, t) for seq, t in vector_texts(title, body, json.loads(tags))}
        if record_id in stored and stored[record_id] != expected:
            stale.append(public_id)
    if stale:
        report.problems.append(f"stale vectors (text changed since embedding): {_listed(stale)}")
