"""What every database engine answers: the interface the rest of Vetted
calls instead of asking which engine runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class DatabaseEngine:
    """One per engine; stateless (connections and cursors are passed in)."""

    #: a short name for people and reports ("sqlite", "postgres")
    name: str = ""
    #: the engine as reports name it (Django's word for it: "sqlite", "postgresql")
    label: str = ""
    #: the Django ENGINE of this engine's backend
    backend: str = ""
    #: the database is one file on this machine (backup copies it; sizes are file sizes)
    is_file: bool = True
    #: several processes (daemons, workers) may serve one database at once, so
    #: limits, sessions and turns must live in the database, not in a process
    shared_by_processes: bool = False
    #: ids may commit out of order (a lower id becomes visible after a higher
    #: one), so a change feed must look back below its cursor
    late_commits: bool = False
    #: appended to a SELECT that must hold its rows until the transaction ends
    row_lock: str = ""
    #: appended to a SELECT that takes rows no other process holds, skipping the rest
    skip_locked: str = ""

    # ------------------------------------------------------------------ transactions

    def take_turn(self, connection: Any, name: str) -> bool:
        """True when this transaction may do the work called ``name`` now,
        False when another process's transaction is doing it (come back next
        pass). Call it inside ``transaction.atomic()``: the turn ends with it."""
        raise NotImplementedError

    def wait_turn(self, cursor: Any, name: str) -> None:
        """Wait until this transaction holds the turn ``name`` (ends with it)."""
        raise NotImplementedError

    def lock_rows(self, cursor: Any, table: str, ids: list[int]) -> None:
        """Lock rows ``ids`` of ``table`` in id order for this transaction, so
        processes updating overlapping sets wait for each other instead of
        deadlocking (nothing to do where a transaction holds the one write lock)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def read_snapshot(self, connection: Any) -> Iterator[None]:
        """One consistent view for a long read, without holding up writers."""
        raise NotImplementedError
        yield  # pragma: no cover

    # ------------------------------------------------------------------ the write log

    def audit_triggers(self) -> tuple[list[str], list[str]]:
        """(create, drop) statements of the write log's append-only triggers."""
        raise NotImplementedError

    #: the names of those triggers, as the engine's catalogue lists them
    audit_trigger_names: frozenset[str] = frozenset()

    def ensure_audit_triggers(self, connection: Any) -> None:
        """Make the append-only triggers if they are missing (after every migrate)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ catalogue

    def table_exists(self, cursor: Any, name: str) -> bool:
        raise NotImplementedError

    def trigger_names(self, cursor: Any) -> set[str]:
        raise NotImplementedError

    def integrity(self, cursor: Any) -> tuple[str, bool, str]:
        """The engine's own consistency check, as a (label, ok, detail) row."""
        raise NotImplementedError

    def before_column_change(self, schema_editor: Any, table: str, trigger: str) -> None:
        """Drop ``trigger`` on ``table`` before a migration changes the type of a
        column it names, where the engine refuses that (SQLite's table rebuild
        drops it by itself); post_migrate makes it again."""

    # ------------------------------------------------------------------ files, sizes, backup

    def place(self, settings_dict: dict[str, Any]) -> str:
        """Where the database is, for people (a file path, or a database on a server)."""
        raise NotImplementedError

    def sizes(self, connection: Any) -> tuple[str, int, int]:
        """(where, bytes of the database, bytes of its write-ahead log)."""
        raise NotImplementedError

    def serve_lock_path(self, settings_dict: dict[str, Any], home: Path) -> Path:
        """The file `serve` holds a shared lock on for its whole life."""
        raise NotImplementedError

    def backup_refusal(self, settings_dict: dict[str, Any], path: str | None) -> str | None:
        """Why `backup` does not copy this database, with what to run instead (None: it does)."""
        raise NotImplementedError

    def restore_refusal(self, settings_dict: dict[str, Any], path: str) -> str | None:
        """Why `restore` does not replace this database, with what to run instead (None: it does)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ scratch databases

    def scratch_name(self, folder: Path, token: str) -> str:
        """The NAME of a throwaway database (made in ``folder`` or on the same server)."""
        raise NotImplementedError

    def create_scratch(self, connection: Any, name: str) -> None:
        raise NotImplementedError

    def drop_scratch(self, connection: Any, name: str) -> None:
        raise NotImplementedError

    def scratch_entry(self, folder: Path) -> dict[str, Any]:
        """A DATABASES entry for a new, empty database of this engine in ``folder``
        (None where this engine needs a server: the caller provides one)."""
        raise NotImplementedError
