"""SQLite: one file, one writer at a time (every transaction starts with
BEGIN IMMEDIATE, the one write lock), read by one daemon."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import audit_log
from ..base import DatabaseEngine


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class SQLiteEngine(DatabaseEngine):
    name = "sqlite"
    label = "sqlite"
    backend = "dbengine.sqlite"
    is_file = True
    shared_by_processes = False
    late_commits = False
    row_lock = ""
    skip_locked = ""
    audit_trigger_names = audit_log.TRIGGER_NAMES

    def take_turn(self, connection: Any, name: str) -> bool:
        # Every transaction already starts with BEGIN IMMEDIATE, the one write
        # lock, so the turn is always this one's.
        return True

    def wait_turn(self, cursor: Any, name: str) -> None:
        return None

    def lock_rows(self, cursor: Any, table: str, ids: list[int]) -> None:
        return None

    @contextlib.contextmanager
    def read_snapshot(self, connection: Any) -> Iterator[None]:
        # Django's transactions start with BEGIN IMMEDIATE (the write lock),
        # which would stall the daemon's writers for the whole read. A deferred
        # transaction in WAL mode reads one snapshot while writers go on.
        with connection.cursor() as cursor:
            cursor.execute("BEGIN DEFERRED")
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("COMMIT")

    def audit_triggers(self) -> tuple[list[str], list[str]]:
        return audit_log.CREATE_TRIGGERS, audit_log.DROP_TRIGGERS

    def ensure_audit_triggers(self, connection: Any) -> None:
        # SQLite's ALTER support is limited, so Django rebuilds a table for many
        # schema changes, and dropping the old table drops its triggers: made
        # again after every migrate (CREATE TRIGGER IF NOT EXISTS).
        with connection.cursor() as cursor:
            for sql in audit_log.CREATE_TRIGGERS:
                cursor.execute(sql)

    def table_exists(self, cursor: Any, name: str) -> bool:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [name])
        return cursor.fetchone() is not None

    def trigger_names(self, cursor: Any) -> set[str]:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {row[0] for row in cursor.fetchall()}

    def integrity(self, cursor: Any) -> tuple[str, bool, str]:
        cursor.execute("PRAGMA integrity_check")
        integrity = cursor.fetchone()[0]
        return ("PRAGMA integrity_check", integrity == "ok", integrity)

    def place(self, settings_dict: dict[str, Any]) -> str:
        return str(settings_dict["NAME"])

    def sizes(self, connection: Any) -> tuple[str, int, int]:
        db = Path(str(connection.settings_dict["NAME"]))
        return str(db), _size(db), _size(Path(f"{db}-wal"))

    def serve_lock_path(self, settings_dict: dict[str, Any], home: Path) -> Path:
        return Path(f"{settings_dict['NAME']}.serve-lock")

    def backup_refusal(self, settings_dict: dict[str, Any], path: str | None) -> str | None:
        return None

    def restore_refusal(self, settings_dict: dict[str, Any], path: str) -> str | None:
        return None

    def scratch_name(self, folder: Path, token: str) -> str:
        return str(folder / "scratch.sqlite3")

    def create_scratch(self, connection: Any, name: str) -> None:
        return None  # the file is made by the first connection

    def drop_scratch(self, connection: Any, name: str) -> None:
        return None  # the file goes with its folder

    def scratch_entry(self, folder: Path) -> dict[str, Any]:
        return {"ENGINE": self.backend, "NAME": str(folder / "x.sqlite3")}
