"""The index's own bookkeeping (retrieval_meta): which model and layout built
it. Both the indexer (index.py) and its checker (index_check.py) read it, so
it lives below both."""

from __future__ import annotations

from django.db import connection
from django.db.backends.utils import CursorWrapper

from . import tables

SCHEMA_VERSION = "3"
KNN_MAX = 4096  # sqlite-vec's cap on k


def read_meta() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, value FROM {tables.META}")
        return dict(cursor.fetchall())


def write_meta(cursor: CursorWrapper, **values: object) -> None:
    for key, value in values.items():
        cursor.execute(
            f"INSERT INTO {tables.META} (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, str(value)],
        )


def vec_table_exists(cursor: CursorWrapper) -> bool:
    from dbengine import database_engine

    return database_engine(cursor).table_exists(cursor, tables.VEC)
