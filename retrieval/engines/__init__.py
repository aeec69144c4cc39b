"""Retrieval's part of each database engine: keyword ranking, nearest
vectors, the index tables and their triggers, index checks, rebuilds and the
migrations' upgrade steps. ``retrieval_engine(cursor)`` picks it from the
connection's database engine (dbengine), once per connection; nothing else in
retrieval asks which engine runs.

- ``base.py``: ``RetrievalEngine``, what every engine answers;
- ``sqlite/``: FTS5 (porter and trigram tables per partition) and sqlite-vec's vec0;
- ``postgres/``: a weighted tsvector with BM25 from a term table, pg_trgm, pgvector (HNSW);
- ``sqlite_to_postgres.py``: copying a SQLite database into PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from dbengine import database_engine

from .base import RetrievalEngine

__all__ = ["RetrievalEngine", "retrieval_engine"]

_ENGINES: dict[str, RetrievalEngine] = {}


def retrieval_engine(connection: Any = None) -> RetrievalEngine:
    """Retrieval's engine for ``connection`` (a connection, a cursor of one, or
    the default connection)."""
    name = database_engine(connection).name
    if name not in _ENGINES:
        if name == "postgres":
            from .postgres import PostgresRetrieval

            _ENGINES[name] = PostgresRetrieval()
        else:
            from .sqlite import SQLiteRetrieval

            _ENGINES[name] = SQLiteRetrieval()
    return _ENGINES[name]
