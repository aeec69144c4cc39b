"""The upgrade steps of retrieval's migrations on SQLite (each named after its
migration; a database made after a step already has its layout)."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from ... import tables
from ...index_meta import SCHEMA_VERSION
from . import ddl

# The space's column before the rename, and today's (space_columns renames it).
OLD_NAME, NEW_NAME = tables.OLD_NAME, "space"


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
    # The columns as they were called when this step was written (reviews
    # 0011 and retrieval 0006 rename them): reviews_record still has its old
    # name here, and a chunk table made today gets a stray copy of it, which
    # space_columns drops.
    old = OLD_NAME
    cursor.execute(f"PRAGMA table_info({tables.CHUNKS})")
    if old not in {row[1] for row in cursor.fetchall()}:
        cursor.execute(f"ALTER TABLE {tables.CHUNKS} ADD COLUMN {old} TEXT NOT NULL DEFAULT ''")
    cursor.execute(
        f"UPDATE {tables.CHUNKS} SET {old} = coalesce((SELECT r.{old} FROM {tables.RECORD_TABLE} r "
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
    # vec0 gets its partition (the old name) and state columns. The vectors are
    # rebuilt from the copies in retrieval_chunk, so nothing is embedded
    # again; every row starts withheld until reconcile files its document.
    cursor.execute(f"SELECT value FROM {tables.META} WHERE key = 'dimension'")
    row = cursor.fetchone()
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [tables.VEC])
    if cursor.fetchone() is not None and row is not None:
        cursor.execute(f"DROP TABLE {tables.VEC}")
        columns = ddl.VEC_COLUMNS.format(dimension=int(row[0])).replace(f"{NEW_NAME} text", f"{old} text")
        cursor.execute(f"CREATE VIRTUAL TABLE {tables.VEC} USING vec0({columns})")
        cursor.execute(
            f"INSERT INTO {tables.VEC} (rowid, {old}, held, embedding) SELECT id, {old}, 1, embedding "
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


def _columns(cursor: CursorWrapper, table: str) -> set[str]:
    cursor.execute(f"PRAGMA table_info({table})")
    return {row[1] for row in cursor.fetchall()}


def _rename_columns(cursor: CursorWrapper, old: str, new: str) -> None:
    """retrieval 0006 (old -> new) and its undoing (new -> old). ALTER TABLE
    ... RENAME COLUMN for the documents and the chunks (SQLite rewrites the
    views, triggers and indexes that name the column). vec0 cannot rename a
    column, so its table is made anew and filled from the vector copy each
    chunk keeps beside its text, with each row's ``held`` flag as it was:
    nothing is embedded again. Idempotent."""
    for table in (tables.DOCS, tables.CHUNKS):
        columns = _columns(cursor, table)
        if old in columns and new not in columns:
            cursor.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")
        elif old in columns:
            # A database made from scratch before this step got a stray,
            # empty copy of the old column from 0003 beside the current one.
            cursor.execute(f"ALTER TABLE {table} DROP COLUMN {old}")
    cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [tables.VEC])
    row = cursor.fetchone()
    if row is None or f"{old} text partition key" not in row[0]:
        return  # no vectors yet, or already renamed
    cursor.execute(f"SELECT value FROM {tables.META} WHERE key = 'dimension'")
    found = cursor.fetchone()
    if found is None:
        cursor.execute(f"DROP TABLE {tables.VEC}")  # no known dimension: the indexer makes it again
        return
    dimension = int(found[0])
    cursor.execute(f"CREATE TEMP TABLE retrieval_vec_held AS SELECT rowid AS id, held FROM {tables.VEC}")
    cursor.execute(f"DROP TABLE {tables.VEC}")
    vec_columns = ddl.VEC_COLUMNS.format(dimension=dimension).replace(f"{NEW_NAME} text", f"{new} text")
    cursor.execute(f"CREATE VIRTUAL TABLE {tables.VEC} USING vec0({vec_columns})")
    # Only vectors vec0 held before: a chunk whose vector it lacked stays
    # without one, as it was (reconcile embeds what is missing).
    cursor.execute(
        f"INSERT INTO {tables.VEC} (rowid, {new}, held, embedding) SELECT c.id, c.{new}, h.held, c.embedding "
        f"FROM {tables.CHUNKS} c JOIN retrieval_vec_held h ON h.id = c.id "
        "WHERE c.embedding IS NOT NULL AND length(c.embedding) = %s",
        [4 * dimension],
    )
    cursor.execute("DROP TABLE retrieval_vec_held")
    # Each space's vector snapshot is rebuilt from the new table (vectors.py).
    cursor.execute(f"DELETE FROM {tables.META} WHERE key LIKE 'vectors_%%'")


def space_columns(cursor: CursorWrapper) -> None:
    _rename_columns(cursor, OLD_NAME, NEW_NAME)


def space_columns_backwards(cursor: CursorWrapper) -> None:
    _rename_columns(cursor, NEW_NAME, OLD_NAME)


STEPS = {
    "chunk_embedding_copy": chunk_embedding_copy,
    "approved_content_per_space": approved_content_per_space,
    "space_columns": space_columns,
    "space_columns_backwards": space_columns_backwards,
}
