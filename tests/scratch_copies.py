"""A fresh, migrated database for import tests, copied instead of migrated.

``devtools.scratch.scratch_database`` runs every migration for each scratch
database: 3-5 s of a test's 4-10 s in tests/test_export_json.py and
tests/test_space_snapshots.py (13 tests in the fast subset). Here the first
scratch database of a test process is made by it (so by the real
``migrate``, post_migrate handlers included), kept as a template, and each
later one is a copy of it: the file on SQLite (after folding its WAL in), a
``CREATE DATABASE ... TEMPLATE`` on PostgreSQL. The migrations write no
random data, so a copy is the database a migration would have made.
"""

from __future__ import annotations

import atexit
import contextlib
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.contrib.contenttypes.models import ContentType
from django.db import connections

from dbengine import database_engine
from devtools.scratch import scratch_database

_template: dict[str, str] = {}  # "name": the kept template (a file path, or a PostgreSQL database name)


def _make_template() -> str:
    conn = connections["default"]
    if database_engine(conn).is_file:
        folder = Path(tempfile.mkdtemp(prefix="vetted-scratch-template-"))
        atexit.register(shutil.rmtree, folder, True)
        with scratch_database(folder=folder):  # a kept folder: the file stays
            name = str(conn.settings_dict["NAME"])
            with conn.cursor() as cursor:
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a copy of the main file alone is whole
        return name
    with scratch_database(keep=True) as folder:
        name = str(conn.settings_dict["NAME"])
    shutil.rmtree(folder, ignore_errors=True)
    atexit.register(_drop_quietly, name)
    return name


def _drop_quietly(name: str) -> None:
    with contextlib.suppress(Exception):
        database_engine(connections["default"]).drop_scratch(connections["default"], name)


@contextlib.contextmanager
def fresh_database() -> Iterator[Path]:
    """What ``scratch_database()`` gives (the default connection on a new,
    migrated, empty database; a temporary folder), from a copy."""
    if "name" not in _template:
        _template["name"] = _make_template()
    conn = connections["default"]
    engine = database_engine(conn)
    folder = Path(tempfile.mkdtemp(prefix="vetted-scratch-"))
    conn.close()
    original = conn.settings_dict["NAME"]
    if engine.is_file:
        name = engine.scratch_name(folder, secrets.token_hex(6))
        shutil.copyfile(_template["name"], name)
    else:
        name = engine.scratch_name(folder, secrets.token_hex(6))
        with conn._nodb_cursor() as cursor:  # CREATE DATABASE runs outside a transaction
            cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE "{_template["name"]}"')
    conn.settings_dict["NAME"] = name
    # migrate's post_migrate handler empties this cache; the ids are the same
    # in every migrated database, but a copy should leave nothing to chance.
    ContentType.objects.clear_cache()
    try:
        yield folder
    finally:
        conn.close()
        conn.settings_dict["NAME"] = original
        ContentType.objects.clear_cache()
        if not engine.is_file:
            engine.drop_scratch(conn, name)
        shutil.rmtree(folder, ignore_errors=True)
