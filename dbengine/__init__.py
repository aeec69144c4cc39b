"""The database engine Vetted runs on, behind one interface.

``database_engine(connection)`` is the one place that asks Django which
engine a connection is; everything that differs between SQLite and
PostgreSQL (locks, turns, the read snapshot, the write log's triggers,
backup and restore, sizes, scratch databases, the serve lock) is a method
or property of the object it returns. The Django backends themselves are
``dbengine.sqlite`` and ``dbengine.postgres`` (the ENGINE settings).

This package imports only Django and the standard library: the domain
(reviews/), notify and the commands all stand on it.
"""

from __future__ import annotations

from typing import Any

from django.db import connections

from .base import DatabaseEngine

__all__ = ["DatabaseEngine", "database_engine"]

_ENGINES: dict[str, DatabaseEngine] = {}


def database_engine(connection: Any = None) -> DatabaseEngine:
    """The engine of ``connection`` (a Django connection or a cursor of one;
    default: the default connection). Chosen once per connection and kept
    on it; the engines themselves hold no state."""
    db = getattr(connection, "db", connection)
    if not hasattr(db, "vendor"):
        # None, or a wrapped or test cursor without .db: the default connection's engine is the engine.
        db = connections["default"]
    chosen: DatabaseEngine | None = getattr(db, "vetted_engine", None)
    if chosen is None:
        chosen = _for_vendor(db.vendor)
        try:
            setattr(db, "vetted_engine", chosen)  # noqa: B010 - not an attribute of Django's wrapper type
        except AttributeError:  # a stand-in without attributes: ask again next time
            pass
    return chosen


def _for_vendor(vendor: str) -> DatabaseEngine:
    if vendor not in _ENGINES:
        if vendor == "postgresql":
            from .postgres.engine import PostgresEngine

            _ENGINES[vendor] = PostgresEngine()
        elif vendor == "sqlite":
            from .sqlite.engine import SQLiteEngine

            _ENGINES[vendor] = SQLiteEngine()
        else:
            raise ValueError(f"Vetted runs on SQLite or PostgreSQL, not on {vendor!r}.")
    return _ENGINES[vendor]
