"""The upgrade steps of retrieval's migrations on PostgreSQL (each named after
its migration; migration 0001 made the layout of its day)."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from ... import tables
from . import ddl, terms


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


STEPS = {
    "fold_diacritics_and_lengths": fold_diacritics_and_lengths,
    "term_frequencies": term_frequencies,
}
