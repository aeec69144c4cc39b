"""PostgreSQL: a database on a server that several daemons may share; MVCC,
row locks and advisory locks instead of SQLite's one write lock."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import audit_log
from ..base import DatabaseEngine


class PostgresEngine(DatabaseEngine):
    name = "postgres"
    label = "postgresql"
    backend = "dbengine.postgres"
    is_file = False
    shared_by_processes = True
    late_commits = True
    row_lock = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    audit_trigger_names = audit_log.POSTGRES_TRIGGER_NAMES

    def take_turn(self, connection: Any, name: str) -> bool:
        # A transaction-scoped advisory lock, tried without waiting.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))", [f"vetted-turn:{name}"])
            return bool(cursor.fetchone()[0])

    def wait_turn(self, cursor: Any, name: str) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [name])

    def lock_rows(self, cursor: Any, table: str, ids: list[int]) -> None:
        every = sorted(ids)
        marks = ",".join(["%s"] * len(every))
        cursor.execute(f"SELECT id FROM {table} WHERE id IN ({marks}) ORDER BY id FOR UPDATE", every)

    @contextlib.contextmanager
    def read_snapshot(self, connection: Any) -> Iterator[None]:
        # MVCC: a repeatable-read transaction reads one snapshot and blocks no
        # writer (SET TRANSACTION must be its first statement).
        from django.db import transaction

        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield

    def audit_triggers(self) -> tuple[list[str], list[str]]:
        return audit_log.POSTGRES_CREATE_TRIGGERS, audit_log.POSTGRES_DROP_TRIGGERS

    def ensure_audit_triggers(self, connection: Any) -> None:
        with connection.cursor() as cursor:
            # Once made, PostgreSQL keeps them (no table rebuilds); and after
            # `pg_roles` the log belongs to another role, so the application's
            # role could not replace them (only its owner may).
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass", [audit_log.AUDIT_TABLE])
            if self.audit_trigger_names <= {row[0] for row in cursor.fetchall()}:
                return
            for sql in audit_log.POSTGRES_CREATE_TRIGGERS:
                cursor.execute(sql)

    def table_exists(self, cursor: Any, name: str) -> bool:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return bool(cursor.fetchone()[0])

    def trigger_names(self, cursor: Any) -> set[str]:
        cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        return {row[0] for row in cursor.fetchall()}

    def integrity(self, cursor: Any) -> tuple[str, bool, str]:
        cursor.execute("SELECT count(*) FROM pg_index WHERE NOT indisvalid OR NOT indisready")
        invalid = cursor.fetchone()[0]
        return ("PostgreSQL indexes valid and ready", invalid == 0, f"{invalid} invalid index(es)")

    def before_column_change(self, schema_editor: Any, table: str, trigger: str) -> None:
        # PostgreSQL refuses to change the type of a column a trigger names.
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")

    def place(self, settings_dict: dict[str, Any]) -> str:
        from .where import where

        return where(settings_dict)

    def sizes(self, connection: Any) -> tuple[str, int, int]:
        # A database on a server, not a file: no write-ahead log of its own.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_database_size(current_database())")
            size = int(cursor.fetchone()[0])
        return self.place(connection.settings_dict), size, 0

    def serve_lock_path(self, settings_dict: dict[str, Any], home: Path) -> Path:
        # A database name, not a file: the lock lives in VETTED_HOME.
        return Path(home) / f"postgres-{settings_dict['NAME']}.serve-lock"

    def backup_refusal(self, settings_dict: dict[str, Any], path: str | None) -> str | None:
        from .where import dump_command

        path = path or "vetted-$(date +%Y%m%d-%H%M%S).dump"
        return (
            "backup copies the SQLite file; this instance runs on PostgreSQL. Back it up with pg_dump "
            f"(safe while the server runs; the password comes from PGPASSWORD or ~/.pgpass):\n"
            f"  {dump_command(settings_dict, path)}"
        )

    def restore_refusal(self, settings_dict: dict[str, Any], path: str) -> str | None:
        from .where import restore_command

        return (
            "restore replaces the SQLite file; this instance runs on PostgreSQL. Stop every Vetted daemon, "
            "then restore a pg_dump file with pg_restore (it drops and re-creates what the dump holds):\n"
            f"  {restore_command(settings_dict, path)}\n"
            "and run `vetted index check --sync` afterwards."
        )

    def scratch_name(self, folder: Path, token: str) -> str:
        return f"vetted_scratch_{token}"

    def create_scratch(self, connection: Any, name: str) -> None:
        self._outside_transaction(connection, f'CREATE DATABASE "{name}"')

    def drop_scratch(self, connection: Any, name: str) -> None:
        self._outside_transaction(connection, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @staticmethod
    def _outside_transaction(connection: Any, sql: str) -> None:
        """CREATE/DROP DATABASE, which cannot run in a transaction: from a
        connection to the original database (not the test runner's)."""
        with connection._nodb_cursor() as cursor:
            cursor.execute(sql)

    def scratch_entry(self, folder: Path) -> dict[str, Any]:
        raise ValueError("A PostgreSQL scratch database needs a server: use a throwaway one or VETTED_DATABASE_URL.")
