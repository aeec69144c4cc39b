"""Data migrations write through the database being migrated
(``schema_editor.connection.alias``), never through the default one:
``migrate --database X`` of a second, empty database leaves the default
database as it was and gives X the rows the migrations make (the three
spaces of 0008). On the suite's engine: a second SQLite file, or a second
database on the test PostgreSQL server."""

from __future__ import annotations

import secrets

import pytest
from django.core.management import call_command
from django.db import connections
from django.test.utils import CaptureQueriesContext

from retrieval.engines import sqlite_to_postgres as copy
from reviews.models import AuditEvent, Proposal, Record
from reviews.space_models import Space

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


@pytest.fixture
def second_database(tmp_path):
    """An empty database beside the default one, open as the alias copy.TARGET
    (a connection of this thread only, not in settings.DATABASES)."""
    default = connections["default"]
    postgres = default.vendor == "postgresql"
    name = f"vetted_second_{secrets.token_hex(4)}" if postgres else str(tmp_path / "second.sqlite3")
    if postgres:
        with default._nodb_cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
    copy.open_target({**default.settings_dict, "NAME": name})
    try:
        yield copy.TARGET
    finally:
        copy.close_target()
        if postgres:
            with default._nodb_cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _default_rows() -> dict[str, list]:
    return {
        "records": list(Record.objects.order_by("pk").values()),
        "proposals": list(Proposal.objects.order_by("pk").values()),
        "spaces": list(Space.objects.order_by("pk").values()),
        "audit": list(AuditEvent.objects.order_by("pk").values_list("pk", flat=True)),
    }


@pytest.mark.django_db
def test_migrate_of_a_second_database_fills_it_and_leaves_the_default_one_alone(second_database, record):
    # A record with no approved copy on file, as before 0003: its backfill
    # (and 0004's look-alike keys, and 0008's spaces) would land here if a
    # data migration wrote through the default connection.
    Record.objects.filter(pk=record.pk).update(approved_content=None, skeleton_checksum="", title_skeleton="")
    before = _default_rows()
    with CaptureQueriesContext(connections["default"]) as on_default:
        call_command("migrate", database=second_database, interactive=False, verbosity=0)
    writes = [q["sql"] for q in on_default.captured_queries if q["sql"].lstrip().upper().startswith(WRITES)]
    assert writes == []
    assert _default_rows() == before
    assert sorted(Space.objects.using(second_database).values_list("slug", "kind")) == [
        ("personal", "personal"),
        ("system", "system"),
        ("team", "team"),
    ]
    # A fresh install gets its spaces silently (0008) and has nothing else.
    assert not AuditEvent.objects.using(second_database).exists()
    assert not Record.objects.using(second_database).exists()
