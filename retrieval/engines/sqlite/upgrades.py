"""The upgrade steps of retrieval's migrations on SQLite (each named after its
migration; a database made after a step already has its layout)."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from ... import tables
from ...index_meta import SCHEMA_VERSION
from . import ddl


def nothing(cursor: CursorWrapper) -> None:
    return None


def chunk_embedding_copy(cursor: CursorWrapper) -> None:
    # A copy of each chunk's vector beside its text: vec0 point lookups by
    # rowid read whole 1024-vector blocks (8 ms for 64 rows at 10k
    # records), a plain table row is read in microseconds. Search needs
    # such lookups for keyword hits the nearest-neighbour query missed.
    # (0001 builds from sqlite/ddl.py, which already has the column
    # on databases created after this change.)
    cursor.execute("PRAGMA table_info(retrieval_chunk)")
    if "embedding" not in {row[1] for row in cursor.fetchall()}:
        cursor.execute("ALTER TABLE retrieval_chunk ADD COLUMN embedding BLOB")
    # Existing chunks have no copy: drop them and the vectors so the next
    # sync re-embeds everything (meta is cleared, so the vec0 table is
    # created afresh with the configured model).
    cursor.execute("DELETE FROM retrieval_chunk")
    cursor.execute("DROP TABLE IF EXISTS retrieval_vec")
    cursor.execute("DELETE FROM retrieval_meta")
    cursor.execute("INSERT OR IGNORE INTO retrieval_dirty (record_id) SELECT id FROM reviews_record")


def approved_content_per_space(cursor: CursorWrapper) -> None:
    # The first layout indexed each record's *current* text in one FTS pair over
    # reviews_record, for every space and state at once. This one indexes only
    # approved content, one partition per space and state (ddl.py).
    # Raw SQL only: this runs before later migrations of reviews_record, so the
    # Record model may not match the table yet.
    for sql in ddl.OLD_LAYOUT:
        cursor.execute(sql)
    cursor.execute(f"PRAGMA table_info({tables.CHUNKS})")
    if "space" not in {row[1] for row in cursor.fetchall()}:
        cursor.execute(f"ALTER TABLE {tables.CHUNKS} ADD COLUMN space TEXT NOT NULL DEFAULT ''")
    cursor.execute(
        f"UPDATE {tables.CHUNKS} SET space = coalesce((SELECT r.space FROM {tables.RECORD_TABLE} r "
        f"WHERE r.id = record_id), '')"
    )
    # create_all queues every record; the first reconcile (on the next
    # search, sync or `serve`) checks each one's checksum and indexes the
    # approved ones. A record already edited out of band has no approved
    # text left to index: it stays out of the indexes (its chunks go at
    # the next sync).
    ddl.create_all(cursor)
    cursor.execute(
        f"INSERT INTO {tables.DIRTY} (record_id) SELECT id FROM {tables.RECORD_TABLE} WHERE true "
        "ON CONFLICT (record_id) DO UPDATE SET gen = gen + 1"
    )
    # vec0 gets its partition (space) and state columns. The vectors are
    # rebuilt from the copies in retrieval_chunk, so nothing is embedded
    # again; every row starts withheld until reconcile files its document.
    cursor.execute(f"SELECT value FROM {tables.META} WHERE key = 'dimension'")
    row = cursor.fetchone()
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [tables.VEC])
    if cursor.fetchone() is not None and row is not None:
        cursor.execute(f"DROP TABLE {tables.VEC}")
        cursor.execute(f"CREATE VIRTUAL TABLE {tables.VEC} USING vec0({ddl.VEC_COLUMNS.format(dimension=int(row[0]))})")
        cursor.execute(
            f"INSERT INTO {tables.VEC} (rowid, space, held, embedding) SELECT id, space, 1, embedding "
            f"FROM {tables.CHUNKS} WHERE embedding IS NOT NULL AND length(embedding) = %s",
            [4 * int(row[0])],
        )
        cursor.execute(
            f"DELETE FROM {tables.CHUNKS} WHERE embedding IS NULL OR length(embedding) != %s", [4 * int(row[0])]
        )
        cursor.execute(f"UPDATE {tables.META} SET value = %s WHERE key = 'schema_version'", [SCHEMA_VERSION])
    else:
        cursor.execute(f"DROP TABLE IF EXISTS {tables.VEC}")
        cursor.execute(f"DELETE FROM {tables.CHUNKS}")
        cursor.execute(f"DELETE FROM {tables.META}")
    cursor.execute(f"DELETE FROM {tables.META} WHERE key LIKE 'vectors_%%'")


STEPS = {
    "chunk_embedding_copy": chunk_embedding_copy,
    "approved_content_per_space": approved_content_per_space,
}
