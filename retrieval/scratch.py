"""A throwaway database for benchmarks and evaluations.

Points Django's default connection at a fresh SQLite file in a temporary
folder, migrates it, and restores the real database afterwards, so a
benchmark can never touch the user's memory.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper


@contextlib.contextmanager
def scratch_database(keep: bool = False) -> Iterator[Path]:
    """On PostgreSQL (issue 17) the scratch database is a new database on the
    same server, dropped afterwards unless ``keep``; the folder is still made
    for the caller's other files."""
    folder = Path(tempfile.mkdtemp(prefix="vetted-scratch-"))
    conn = connections["default"]
    postgres = conn.vendor == "postgresql"
    conn.close()
    original = conn.settings_dict["NAME"]
    name = f"vetted_scratch_{secrets.token_hex(6)}" if postgres else str(folder / "scratch.sqlite3")
    if postgres:
        _postgres(conn, f'CREATE DATABASE "{name}"')
    conn.settings_dict["NAME"] = name
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield folder
    finally:
        conn.close()
        conn.settings_dict["NAME"] = original
        if postgres and not keep:
            _postgres(conn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def _postgres(conn: BaseDatabaseWrapper, sql: str) -> None:
    """CREATE/DROP DATABASE, which cannot run in a transaction: from a
    connection to the original database (not the test runner's)."""
    with conn._nodb_cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(sql)


def scratch_reviewer() -> User:
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    return user_model.objects.filter(username="bench").first() or user_model.objects.create_superuser(
        "bench", "bench@example.invalid", None
    )
