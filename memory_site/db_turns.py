"""One process at a time for a piece of bookkeeping, on either engine
(issue 17, several daemons over one PostgreSQL database)."""

from __future__ import annotations

from django.db import connection


def take_turn(name: str) -> bool:
    """True when this transaction may do the work called ``name`` now, False
    when another process's transaction is doing it (come back next pass).
    Call it inside ``transaction.atomic()``: the turn ends with the
    transaction. On PostgreSQL it is a transaction-scoped advisory lock,
    tried without waiting; on SQLite every transaction already starts with
    BEGIN IMMEDIATE, the one write lock, so the turn is always this one's."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))", [f"vetted-turn:{name}"])
        return bool(cursor.fetchone()[0])
