"""Backups of the live database and restoring one.

A backup is made with SQLite's online backup API on the same driver Django
uses (``dbengine.sqlite.base.DRIVER``), from a read transaction:
it is one consistent snapshot even while the server writes (WAL lets the
writers go on), which a file copy of a WAL database is not (the newest
transactions sit in the -wal file, and a copy can catch a page half-written).
The copy is written under a temporary name, switched to rollback-journal mode
(one self-contained file), checked (``PRAGMA integrity_check`` and the record
count seen by the snapshot), and only then given its final name.

Restoring refuses while a server is running, checks the file (integrity, a
Vetted database, no migrations newer than this code), keeps a safety copy of
the current database, then swaps the file in and removes the old -wal/-shm
files (a stale WAL next to another database would be replayed into it).
"""

from __future__ import annotations

import contextlib
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from common.files import replaced_atomically, serve_lock_path
from dbengine.sqlite.base import DRIVER, load_vec

BACKUP_RE = re.compile(r"^vetted-(\d{8}-\d{6})(?:-(\d+))?\.sqlite3$")
SQLITE_MAGIC = b"SQLite format 3\x00"


class BackupError(Exception):
    """Something about a backup or restore that the user must fix; the message says what."""


@dataclass
class BackupResult:
    path: Path
    size: int
    records: int
    pruned: list[Path] = field(default_factory=list)


@dataclass
class RestoreResult:
    restored_from: Path
    database: Path
    records: int
    safety_copy: Path | None
    removed: list[Path] = field(default_factory=list)


def _connect(path: Path | str, *, readonly: bool = False):
    if readonly:
        conn = DRIVER.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, isolation_level=None)
    else:
        conn = DRIVER.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA busy_timeout=5000")
    load_vec(conn)  # vec0 tables are part of the schema: every check must be able to read them
    return conn


def default_folder(home: Path) -> Path:
    return Path(home) / "backups"


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _free_name(folder: Path, prefix: str) -> Path:
    stamp = _stamp()
    candidate = folder / f"{prefix}-{stamp}.sqlite3"
    n = 2
    while candidate.exists():
        candidate = folder / f"{prefix}-{stamp}-{n}.sqlite3"
        n += 1
    return candidate


def check_copy(path: Path) -> tuple[str, int]:
    """(integrity_check result, record count) of a database file."""
    conn = _connect(path)
    try:
        result = "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check").fetchall())
        count = conn.execute("SELECT count(*) FROM reviews_record").fetchone()[0]
        return result, count
    finally:
        conn.close()


def _size_text(path: Path) -> str:
    size = float(path.stat().st_size)
    for unit in ("bytes", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _snapshot(source_path: Path, dest: Path) -> int:
    """Copy ``source_path`` into ``dest`` with the backup API inside one read
    transaction; return the record count of that same snapshot."""
    source = _connect(source_path)
    try:
        source.execute("BEGIN")  # deferred: the next read fixes the snapshot
        records = source.execute("SELECT count(*) FROM reviews_record").fetchone()[0]
        target = DRIVER.connect(str(dest), isolation_level=None)
        try:
            # pages=-1: the whole database in one step, from this connection's
            # snapshot; stepwise copies restart whenever another writer commits.
            source.backup(target, pages=-1)
            target.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file
        finally:
            target.close()
        source.execute("COMMIT")
        return records
    finally:
        source.close()


def _no_stage(text: str) -> None:
    pass


def backup_database(
    db_path: Path,
    *,
    home: Path,
    dest: Path | str | None = None,
    keep: int = 10,
    stage: Callable[[str], None] = _no_stage,
) -> BackupResult:
    """Back up ``db_path`` to ``dest`` (a file, or a folder to name it in;
    default ``home/backups``), verify the copy, and keep the newest ``keep``
    ``vetted-*.sqlite3`` files in that folder. ``stage`` hears each step's
    name as it begins (a terminal shows them)."""
    db_path = Path(db_path)
    if keep < 1:
        raise BackupError(f"--keep {keep}: keep at least 1 backup.")
    if not db_path.exists():
        raise BackupError(f"There is no database at {db_path} to back up (check VETTED_HOME / VETTED_DB_PATH).")
    if dest is None or Path(dest).is_dir() or str(dest).endswith(os.sep):
        folder = Path(dest) if dest is not None else default_folder(home)
        folder.mkdir(parents=True, exist_ok=True)
        final = _free_name(folder, "vetted")
    else:
        final = Path(dest)
        if final.exists():
            raise BackupError(f"{final} already exists; backup never overwrites a file.")
        if not final.parent.is_dir():
            raise BackupError(f"Folder {final.parent} does not exist.")
        folder = final.parent
    if final.resolve() == db_path.resolve():
        raise BackupError("The backup cannot be the live database itself.")
    with replaced_atomically(final) as partial:
        stage(f"copying {_size_text(db_path)}")
        records = _snapshot(db_path, partial)
        stage("checking the copy")
        integrity, copied = check_copy(partial)
        if integrity != "ok":
            raise BackupError(f"The copy failed its integrity check ({integrity}); nothing was kept.")
        if copied != records:
            raise BackupError(f"The copy holds {copied} record(s) but the database held {records}; nothing was kept.")
    stage("removing old backups")
    pruned = prune(folder, keep, spare=final)
    return BackupResult(path=final, size=final.stat().st_size, records=records, pruned=pruned)


def prune(folder: Path, keep: int, *, spare: Path | None = None) -> list[Path]:
    """Delete all but the newest ``keep`` files named vetted-YYYYmmdd-HHMMSS[-N].sqlite3 in ``folder``."""
    found = []
    for path in Path(folder).iterdir():
        match = BACKUP_RE.match(path.name)
        if match and path.is_file():
            found.append(((match.group(1), int(match.group(2) or 1)), path))
    found.sort(reverse=True)
    removed = []
    for _key, path in found[keep:]:
        if spare is not None and path.resolve() == spare.resolve():
            continue
        path.unlink()
        removed.append(path)
    return removed


# --------------------------------------------------------------------------- restore


def server_running(port: int, home: Path, host: str = "127.0.0.1") -> str | None:
    """Why the database is in use, or None. Asks /health on ``port``, then
    checks whether a stdio bridge holds ``home/daemon.lock`` (it does while it
    starts the daemon)."""
    url = f"http://{host}:{port}/health"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError):
        status = None
    if status is not None:
        return (
            f"a server answers {url} (HTTP {status}). Stop it first: `vetted stop`, or press Ctrl-C where "
            f"`make run` / `python manage.py serve --port {port}` runs, or end that process (a daemon started "
            f"in the background or by the stdio bridge logs to {Path(home) / 'daemon.log'}), then run restore again"
        )
    served = serve_lock_path()
    if _lock_held(served):
        return (
            f"a Vetted server has this database open (it holds {served}), whatever port it listens on. "
            "Stop it first (Ctrl-C where `make run` / `manage.py serve` runs), then run restore again"
        )
    lock = Path(home) / "daemon.lock"
    if _lock_held(lock):
        return (
            f"a stdio bridge holds {lock}: it is starting the daemon right now. Wait for it, stop "
            "the daemon it started (`manage.py serve`), then run restore again"
        )
    return None


def _lock_held(path: Path) -> bool:
    """Whether another process holds a flock on ``path`` (never on non-POSIX
    systems, where only the /health check applies)."""
    if not path.exists():
        return False
    try:
        import fcntl
    except ImportError:
        return False
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def _known_migrations() -> set[tuple[str, str]]:
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    return set(loader.disk_migrations)


def check_candidate(path: Path) -> int:
    """Check that ``path`` is a sound Vetted database this code can run;
    return its record count. Raises BackupError naming the problem."""
    path = Path(path)
    if not path.is_file():
        raise BackupError(f"{path} does not exist or is not a file.")
    with open(path, "rb") as handle:
        if handle.read(16) != SQLITE_MAGIC:
            raise BackupError(f"{path} is not an SQLite database.")
    try:
        conn = _connect(path, readonly=True)
    except DRIVER.Error as exc:
        raise BackupError(f"{path} cannot be opened: {exc}.") from None
    try:
        try:
            integrity = "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check").fetchall())
        except DRIVER.Error as exc:
            raise BackupError(f"{path} cannot be read: {exc}.") from None
        if integrity != "ok":
            raise BackupError(f"{path} fails PRAGMA integrity_check: {integrity[:300]}.")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in ("reviews_record", "django_migrations") if t not in tables]
        if missing:
            raise BackupError(f"{path} is not a Vetted database (no {' or '.join(missing)} table).")
        applied = set(conn.execute("SELECT app, name FROM django_migrations").fetchall())
        unknown = sorted(applied - _known_migrations())
        if unknown:
            names = ", ".join(f"{app}.{name}" for app, name in unknown[:10])
            raise BackupError(
                f"{path} comes from a newer Vetted: migrations this code does not have: {names}. "
                "Update this checkout first."
            )
        return conn.execute("SELECT count(*) FROM reviews_record").fetchone()[0]
    finally:
        conn.close()


def pending_migrations(path: Path) -> list[str]:
    """Migrations this code has that the database at ``path`` lacks (run `migrate`)."""
    conn = _connect(path, readonly=True)
    try:
        applied = set(conn.execute("SELECT app, name FROM django_migrations").fetchall())
    finally:
        conn.close()
    return [f"{app}.{name}" for app, name in sorted(_known_migrations() - applied)]


def _sidecars(db_path: Path) -> list[Path]:
    return [db_path.with_name(db_path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def restore_database(
    candidate: Path, *, db_path: Path, home: Path, port: int = 8765, stage: Callable[[str], None] = _no_stage
) -> RestoreResult:
    """Replace ``db_path`` with ``candidate`` (checked first), keeping a
    safety copy of the current database in ``home/backups``. ``stage`` hears
    each step's name as it begins."""
    candidate, db_path = Path(candidate), Path(db_path)
    busy = server_running(port, home)
    if busy:
        raise BackupError(f"Not restoring: {busy}.")
    records = check_candidate(candidate)
    if candidate.resolve() == db_path.resolve():
        raise BackupError(f"{candidate} is the live database itself.")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    # Copy the candidate next to the database first (same filesystem, so the
    # final swap is one atomic rename) and check that copy again.
    removed = []
    with replaced_atomically(db_path) as incoming:
        stage(f"copying the backup ({_size_text(candidate)})")
        source = _connect(candidate, readonly=True)
        try:
            target = DRIVER.connect(str(incoming), isolation_level=None)
            try:
                source.backup(target, pages=-1)
                target.execute("PRAGMA journal_mode=DELETE")
            finally:
                target.close()
        finally:
            source.close()
        stage("checking the copy")
        integrity, copied = check_copy(incoming)
        if integrity != "ok" or copied != records:
            raise BackupError(
                f"The copy of {candidate} did not check out ({integrity}, {copied} records); nothing was changed."
            )
        safety = None
        if db_path.exists():
            folder = default_folder(home)
            folder.mkdir(parents=True, exist_ok=True)
            safety = _free_name(folder, "pre-restore")
            stage("keeping a safety copy of the current database")
            _snapshot(db_path, safety)  # includes whatever is still in the -wal
            integrity, _count = check_copy(safety)
            if integrity != "ok":
                safety.unlink(missing_ok=True)
                raise BackupError(
                    f"The safety copy of the current database failed its check ({integrity}); nothing was changed."
                )
            # Fold the WAL into the old file before it goes away.
            with contextlib.closing(_connect(db_path)) as conn:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if busy:
                raise BackupError(
                    f"Another process is using {db_path} (its write-ahead log could not be folded "
                    "in); stop every Vetted process (serve, shells, imports) and run restore again. "
                    f"Nothing was replaced; a safety copy is in {safety}."
                )
        stage("putting the backup in place")
        for sidecar in _sidecars(db_path):
            if sidecar.exists():
                sidecar.unlink()
                removed.append(sidecar)
    for sidecar in _sidecars(db_path):  # nothing may pair a stale WAL with the new file
        if sidecar.exists():
            sidecar.unlink()
            removed.append(sidecar)
    return RestoreResult(
        restored_from=candidate, database=db_path, records=records, safety_copy=safety, removed=removed
    )
