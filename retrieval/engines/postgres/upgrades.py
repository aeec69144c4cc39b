"""The upgrade steps of retrieval's migrations on PostgreSQL (each named after
its migration; migration 0001 made the layout of its day)."""

from __future__ import annotations

import re

from django.db.backends.utils import CursorWrapper

from ... import tables
from . import ddl, terms

# The space's column before the rename, and today's (space_columns renames it).
OLD_NAME, NEW_NAME = tables.OLD_NAME, "space"


def nothing(cursor: CursorWrapper) -> None:
    return None


def fold_diacritics_and_lengths(cursor: CursorWrapper) -> None:
    # The keyword tsvector folds diacritics (ddl.FOLD), as FTS5's
    # remove_diacritics does on SQLite, and each document keeps its length in
    # tokens (BM25, keyword.py). A database made before this gets the
    # functions, its generated columns made anew (which drops the tsv column's
    # GIN indexes) and those indexes again.
    cursor.execute(ddl.FOLD_FUNCTION)
    cursor.execute(ddl.TOKENS_FUNCTION)
    cursor.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a "
        "ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = %s::regclass AND a.attname = 'tsv'",
        [tables.DOCS],
    )
    row = cursor.fetchone()
    if row is not None and ddl.FOLD in row[0]:
        return  # made by 0001 with the current layout
    cursor.execute(f"ALTER TABLE {tables.DOCS} DROP COLUMN IF EXISTS tsv, DROP COLUMN IF EXISTS tokens")
    cursor.execute(f"ALTER TABLE {tables.DOCS} ADD COLUMN {ddl.tsv_column()}, ADD COLUMN {ddl.tokens_column()}")
    if tables.index_waits(cursor):
        return  # the partition indexes name today's column: ensure_partitions makes them after 0006
    for space in tables.current_spaces(cursor):
        for sql in ddl.partition_indexes(space):
            cursor.execute(sql)


def term_frequencies(cursor: CursorWrapper) -> None:
    # BM25's term frequencies get a table of their own, kept by a trigger
    # (terms.py says why), instead of being read from every matching row's
    # tsvector at query time. A database made before this gets the table, its
    # function and triggers, and its rows from the documents already indexed.
    for sql in terms.TABLE:
        cursor.execute(sql)
    ddl.ensure_partitions(cursor)  # the function and the triggers
    for sql in terms.REBUILD:
        cursor.execute(sql)


def _rename_columns(cursor: CursorWrapper, old: str, new: str) -> None:
    """retrieval 0006 (old -> new) and its undoing (new -> old): RENAME COLUMN
    for the documents, the chunks, the vectors and the term table (indexes,
    partial-index predicates and triggers follow the column), the chunk index
    gets its new name, and the trigger functions, whose bodies name the column
    as text, are made again. Idempotent."""
    for table in (tables.DOCS, tables.CHUNKS, tables.VEC, terms.TERMS):
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = %s AND column_name IN (%s, %s)",
            [table, old, new],
        )
        columns = {row[0] for row in cursor.fetchall()}
        if old in columns and new not in columns:
            cursor.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [f"{tables.CHUNKS}_{old}"])
    if cursor.fetchone()[0]:
        cursor.execute(f"ALTER INDEX {tables.CHUNKS}_{old} RENAME TO {tables.CHUNKS}_{new}")
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [tables.DOCS])
    if not cursor.fetchone()[0]:
        return
    # CREATE OR REPLACE, in the words of the layout just made.
    for sql in ddl.FUNCTIONS:
        cursor.execute(re.sub(rf"\b{NEW_NAME}\b", new, sql))


def space_columns(cursor: CursorWrapper) -> None:
    _rename_columns(cursor, OLD_NAME, NEW_NAME)


def space_columns_backwards(cursor: CursorWrapper) -> None:
    _rename_columns(cursor, NEW_NAME, OLD_NAME)


STEPS = {
    "fold_diacritics_and_lengths": fold_diacritics_and_lengths,
    "term_frequencies": term_frequencies,
    "space_columns": space_columns,
    "space_columns_backwards": space_columns_backwards,
}
