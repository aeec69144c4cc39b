"""Which database engine retrieval is talking to, and the few values whose
SQL form differs between them (issue 17).

Retrieval owns its SQL. SQLite's is in schema.py / fts.py (FTS5, vec0,
triggers); PostgreSQL's in pg_schema.py / pg_fts.py (a weighted tsvector
with GIN indexes, pg_trgm, pgvector with HNSW, plpgsql triggers). Callers
go through schema.create_all, fts.* and the helpers here, which pick the
engine from the connection; fusion, the gate, chunking and evaluation are
shared and never see engine SQL.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from django.db import connection as default_connection
from django.db.backends.utils import CursorWrapper

from . import schema


def is_postgres(cursor: CursorWrapper | None = None) -> bool:
    # (A wrapped or test cursor may not carry .db; the default connection's engine is the engine.)
    db = getattr(cursor, "db", default_connection)
    return db.vendor == "postgresql"


def vector_placeholder(cursor: CursorWrapper) -> str:
    """The SQL parameter a vector is bound to: vec0 reads raw float32 bytes,
    pgvector a '[x,y,...]' literal cast to vector (no client-side adapter needed)."""
    return "%s::vector" if is_postgres(cursor) else "%s"


def vector_value(cursor: CursorWrapper, vector: np.ndarray | bytes) -> bytes | str:
    array = np.frombuffer(vector, dtype=np.float32) if isinstance(vector, bytes) else vector.astype(np.float32)
    if is_postgres(cursor):
        # repr of a float32 round-trips exactly through pgvector's float4 parser.
        return "[" + ",".join(repr(float(x)) for x in array) + "]"
    return np.ascontiguousarray(array, dtype=np.float32).tobytes()


def table_exists(cursor: CursorWrapper, name: str) -> bool:
    if is_postgres(cursor):
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return bool(cursor.fetchone()[0])
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [name])
    return cursor.fetchone() is not None


def trigger_names(cursor: CursorWrapper) -> set[str]:
    if is_postgres(cursor):
        cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
    else:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    return {row[0] for row in cursor.fetchall()}


def index_triggers(cursor: CursorWrapper) -> dict[str, str]:
    """{name: CREATE statement} of the index triggers on this engine."""
    if is_postgres(cursor):
        from . import pg_schema

        return pg_schema.TRIGGERS
    return schema.TRIGGERS


def ensure_partitions(cursor: CursorWrapper, scopes: Iterable[str] | None = None) -> list[str]:
    """Make the index triggers and every current space's partitions (or
    those of ``scopes`` besides) on this engine; idempotent. Returns the scopes."""
    if is_postgres(cursor):
        from . import pg_schema

        return pg_schema.ensure_partitions(cursor, scopes)
    return schema.ensure_partitions(cursor, scopes)
