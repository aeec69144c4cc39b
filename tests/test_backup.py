"""backup / restore: online backups taken while writes go on, checked
copies, keep-last-N, and a restore that refuses a running server or a bad
file, keeps a safety copy and removes stale WAL files."""

from __future__ import annotations

import fcntl
import http.server
import io
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from portability import backup
from reviews import actions
from reviews.models import Record

from .conftest import content
from .gateway_support import free_port

# SQLite's online backup API and its file; on PostgreSQL both commands refuse
# with the pg_dump / pg_restore command (tests/test_postgres.py).
pytestmark = pytest.mark.sqlite_only


def live_db() -> Path:
    return Path(settings.DATABASES["default"]["NAME"])


def run_backup(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("backup", *[str(a) for a in args], stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def open_copy(path: Path):
    return backup._connect(path)  # the project's driver, with sqlite-vec loaded


def consistency_problems(path: Path) -> list[str]:
    """What would be wrong with a database caught half-way through an action."""
    conn = open_copy(path)
    try:
        problems = []
        q = conn.execute
        if q("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append("integrity")
        rows = q(
            "SELECT r.public_id FROM reviews_record r WHERE NOT EXISTS (SELECT 1 FROM reviews_auditevent a "
            "WHERE a.event_type = 'proposal.accepted' AND a.record_ref = r.public_id)"
        ).fetchall()
        if rows:
            problems.append(f"records without their audit event: {rows}")
        rows = q(
            "SELECT r.public_id FROM reviews_record r JOIN reviews_record p ON p.id = r.supersedes_id "
            "WHERE p.status != 'superseded' OR p.superseded_by_id IS NOT r.id"
        ).fetchall()
        if rows:
            problems.append(f"half-applied revisions (predecessor not superseded by it): {rows}")
        rows = q(
            "SELECT public_id FROM reviews_record WHERE status = 'superseded' AND superseded_by_id IS NULL"
        ).fetchall()
        if rows:
            problems.append(f"superseded without successor: {rows}")
        rows = q(
            "SELECT p.public_id FROM reviews_proposal p WHERE p.state = 'accepted' AND p.action IN "
            "('create', 'revise') AND (p.result_record_id IS NULL OR NOT EXISTS (SELECT 1 FROM "
            "reviews_auditevent a WHERE a.event_type = 'proposal.accepted' AND a.proposal_ref = p.public_id))"
        ).fetchall()
        if rows:
            problems.append(f"accepted proposals without result or event: {rows}")
        rows = q(
            "SELECT p.public_id FROM reviews_proposal p JOIN reviews_record r ON r.id = p.result_record_id "
            "WHERE p.action = 'revise' AND r.supersedes_id IS NOT p.target_id"
        ).fetchall()
        if rows:
            problems.append(f"revise results not linked to their target: {rows}")
        return problems
    finally:
        conn.close()


def record_count(path: Path) -> int:
    conn = open_copy(path)
    try:
        return conn.execute("SELECT count(*) FROM reviews_record").fetchone()[0]
    finally:
        conn.close()


# --------------------------------------------------------------------------- backup


@pytest.mark.django_db(transaction=True)
def test_backup_to_the_default_folder_prints_path_size_and_count(settings, tmp_path, make_record):
    settings.VETTED_HOME = tmp_path
    make_record()
    make_record(title="Payments service owner")
    stdout, _ = run_backup()
    match = re.fullmatch(r"Backed up 2 record\(s\) to (\S+) \(([\d.]+ \w+)\); integrity ok\.\n", stdout)
    assert match, stdout
    path = Path(match.group(1))
    assert path.parent == tmp_path / "backups"
    assert re.fullmatch(r"vetted-\d{8}-\d{6}\.sqlite3", path.name)
    assert record_count(path) == 2
    assert sorted(p.name for p in (tmp_path / "backups").iterdir()) == [path.name]  # no temporary file left
    assert not Path(str(path) + "-wal").exists()  # one self-contained file
    assert open_copy(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


@pytest.mark.django_db(transaction=True)
def test_backup_refuses_to_overwrite_and_bad_keep(settings, tmp_path, record):
    settings.VETTED_HOME = tmp_path
    target = tmp_path / "mine.sqlite3"
    target.write_text("precious")
    with pytest.raises(CommandError, match="already exists"):
        run_backup(target)
    assert target.read_text() == "precious"
    with pytest.raises(CommandError, match="keep at least 1"):
        run_backup("--keep", "0")


@pytest.mark.django_db(transaction=True)
def test_keep_last_n_prunes_only_older_vetted_backups(settings, tmp_path, record):
    settings.VETTED_HOME = tmp_path
    folder = tmp_path / "backups"
    folder.mkdir()
    old = [folder / f"vetted-2020010{i}-000000.sqlite3" for i in range(1, 5)]
    for path in old:
        path.write_bytes(b"old")
    others = [folder / "pre-restore-20200101-000000.sqlite3", folder / "notes.txt", folder / "vetted-mine.sqlite3"]
    for path in others:
        path.write_text("keep")

    run_backup("--keep", "3")
    run_backup("--keep", "3")  # same second: gets a -2 suffix and still counts as newest
    third, err = run_backup("--keep", "2", "--json")

    remaining = sorted(p.name for p in folder.glob("vetted-2*.sqlite3"))
    assert len(remaining) == 2
    assert all(not p.exists() for p in old)
    assert all(p.exists() for p in others)
    newest = Path(re.search(r'"path": "([^"]+)"', third).group(1))
    assert newest.name in remaining
    assert "Removed old backup" in err


@pytest.mark.django_db(transaction=True)
def test_backup_during_concurrent_writes_is_consistent_and_restores(settings, tmp_path, reviewer, agent, make_record):
    settings.VETTED_HOME = tmp_path
    base = make_record(title="Counter record", body="The counter value is 0 and it is updated by the writer loop.")
    stop = threading.Event()
    errors: list[BaseException] = []
    done = [0]

    def writer():
        current = base
        try:
            i = 0
            while not stop.is_set() and i < 400:
                i += 1
                p = actions.propose_create(
                    agent=agent,
                    reason="Writer loop adds one",
                    **content(
                        title=f"Loop fact number {i}",
                        body=f"Loop fact {i}: the writer thread wrote this while a backup ran.",
                    ),
                )
                actions.accept_proposal(p, actor=reviewer)
                p = actions.propose_revision(
                    current,
                    agent=agent,
                    reason="Writer loop revises",
                    body=f"The counter value is {i} and it is updated by the writer loop.",
                )
                current = actions.accept_proposal(p, actor=reviewer).result_record
                done[0] = i
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    paths = []
    try:
        while done[0] < 3 and thread.is_alive():
            time.sleep(0.01)
        for n in range(4):
            stdout, _ = run_backup(tmp_path / f"during-{n}.sqlite3")
            paths.append(tmp_path / f"during-{n}.sqlite3")
            assert "integrity ok" in stdout
            time.sleep(0.05)  # let the writer land a few more changes between backups
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not errors, errors
    assert done[0] >= 3
    counts = [record_count(p) for p in paths]
    assert counts == sorted(counts) and counts[0] >= 1
    assert counts[-1] > counts[0], "the backups did not overlap the writes"
    for path in paths:
        assert consistency_problems(path) == [], path

    # Restoring the last one gives a working, consistent database.
    live = tmp_path / "live" / "vetted.sqlite3"
    live.parent.mkdir()
    backup.backup_database(live_db(), home=tmp_path, dest=live)
    result = backup.restore_database(paths[-1], db_path=live, home=tmp_path / "live", port=free_port())
    assert result.records == counts[-1] == record_count(live)
    assert consistency_problems(live) == []
    assert result.safety_copy is not None and record_count(result.safety_copy) == Record.objects.count()


# --------------------------------------------------------------------------- restore: refusals


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"status": "ok"}')

    def log_message(self, *args):
        pass


@pytest.fixture
def health_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    # shutdown() waits for the loop's next poll: the default 0.5 s was most of this test's teardown.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def good_backup(tmp_path):
    """A backup of the (empty-ish) test database."""
    return backup.backup_database(live_db(), home=tmp_path, dest=tmp_path / "good.sqlite3").path


@pytest.mark.django_db(transaction=True)
def test_restore_refuses_while_a_server_answers_health(settings, tmp_path, health_server, good_backup, record):
    settings.VETTED_HOME = tmp_path
    before = live_db().stat().st_mtime_ns
    with pytest.raises(CommandError) as caught:
        call_command(
            "restore",
            str(good_backup),
            "--yes",
            "--port",
            str(health_server),
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    message = str(caught.value)
    assert f"a server answers http://127.0.0.1:{health_server}/health" in message
    assert "Stop it first" in message and "manage.py serve" in message
    assert not (tmp_path / "backups").exists()  # not even a safety copy
    assert Record.objects.filter(pk=record.pk).exists()
    assert live_db().stat().st_mtime_ns == before


def test_restore_refuses_while_a_bridge_holds_the_daemon_lock(tmp_path):
    with open(tmp_path / "daemon.lock", "w") as held:
        # flock locks belong to the open file description, so a second open
        # in this process conflicts like another process would.
        fcntl.flock(held, fcntl.LOCK_EX)
        reason = backup.server_running(free_port(), tmp_path)
    assert reason and "daemon.lock" in reason and "starting the daemon" in reason
    assert backup.server_running(free_port(), tmp_path) is None  # released: nothing in the way


@pytest.mark.django_db(transaction=True)
def test_restore_without_yes_asks_and_refuses_without_a_terminal(settings, tmp_path, good_backup):
    settings.VETTED_HOME = tmp_path
    with pytest.raises(CommandError, match="pass --yes to confirm"):
        call_command(
            "restore", str(good_backup), "--port", str(free_port()), stdout=io.StringIO(), stderr=io.StringIO()
        )


def _not_vetted(tmp_path) -> Path:
    path = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    return path


def _newer(tmp_path, good: Path) -> Path:
    path = tmp_path / "newer.sqlite3"
    src, dst = sqlite3.connect(good), sqlite3.connect(path)
    src.backup(dst)
    src.close()
    dst.execute(
        "INSERT INTO django_migrations (app, name, applied) VALUES ('reviews', '9999_from_the_future', '2030-01-01')"
    )
    dst.commit()
    dst.close()
    return path


def _corrupt(tmp_path, good: Path) -> Path:
    path = tmp_path / "corrupt.sqlite3"
    data = bytearray(good.read_bytes())
    page = 4096
    for offset in range(2 * page, min(len(data), 12 * page), 7):
        data[offset] = (data[offset] + 1) % 256
    path.write_bytes(bytes(data))
    return path


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "make,expected",
    [
        (lambda tmp, good: tmp / "missing.sqlite3", "does not exist"),
        (lambda tmp, good: (tmp / "t.txt").write_text("hello") and tmp / "t.txt", "is not an SQLite database"),
        (
            lambda tmp, good: _not_vetted(tmp),
            r"is not a Vetted database \(no reviews_record or django_migrations table\)",
        ),
        (lambda tmp, good: _newer(tmp, good), "migrations this code does not have: reviews.9999_from_the_future"),
        (
            lambda tmp, good: _corrupt(tmp, good),
            r"(integrity_check|cannot be read|cannot be opened|malformed|not a Vetted)",
        ),
    ],
    ids=["missing", "text", "not-vetted", "newer", "corrupt"],
)
def test_restore_checks_the_file_first_and_changes_nothing(tmp_path, good_backup, make, expected):
    candidate = make(tmp_path, good_backup)
    live = tmp_path / "live.sqlite3"
    backup.backup_database(live_db(), home=tmp_path, dest=live)
    before = live.read_bytes()
    with pytest.raises(backup.BackupError, match=expected):
        backup.restore_database(candidate, db_path=live, home=tmp_path, port=free_port())
    assert live.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))  # the copy that was going to replace it is gone
    assert not (tmp_path / "backups").exists() or not list((tmp_path / "backups").glob("pre-restore-*"))


# --------------------------------------------------------------------------- restore: the swap


@pytest.mark.slow  # starts a Python process
@pytest.mark.django_db(transaction=True)
def test_restore_keeps_a_safety_copy_and_removes_stale_wal(tmp_path, make_record):
    make_record()
    candidate = backup.backup_database(live_db(), home=tmp_path, dest=tmp_path / "one.sqlite3").path
    make_record(title="Payments service owner")
    live = tmp_path / "home" / "vetted.sqlite3"
    live.parent.mkdir()
    backup.backup_database(live_db(), home=tmp_path, dest=live)
    # A server killed mid-flight: a committed write still only in the -wal.
    script = (
        "import sqlite3, os, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute('CREATE TABLE crash_marker (x)'); c.execute(\"INSERT INTO crash_marker VALUES ('in the wal')\")\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(live)], check=True)
    wal = Path(str(live) + "-wal")
    assert wal.exists() and wal.stat().st_size > 0

    result = backup.restore_database(candidate, db_path=live, home=live.parent, port=free_port())

    assert result.records == 1 == record_count(live)
    assert not wal.exists() and not Path(str(live) + "-shm").exists()
    assert consistency_problems(live) == []
    safety = result.safety_copy
    assert safety.parent == live.parent / "backups" and safety.name.startswith("pre-restore-")
    conn = open_copy(safety)
    assert conn.execute("SELECT x FROM crash_marker").fetchone() == ("in the wal",)
    assert conn.execute("SELECT count(*) FROM reviews_record").fetchone()[0] == 2
    conn.close()


@pytest.mark.django_db(transaction=True)
def test_restore_refuses_when_another_connection_holds_the_database(tmp_path, record, monkeypatch):
    candidate = backup.backup_database(live_db(), home=tmp_path, dest=tmp_path / "one.sqlite3").path
    live = tmp_path / "home" / "vetted.sqlite3"
    live.parent.mkdir()
    backup.backup_database(live_db(), home=tmp_path, dest=live)
    writer = backup._connect(live)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE busy_marker (x)")
    reader = backup._connect(live)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM busy_marker").fetchone()  # holds a snapshot
    writer.execute("INSERT INTO busy_marker VALUES (1)")
    # The restore waits its connections' busy timeout (5 s) for the reader to
    # let go before it refuses; this reader holds on until the end, so a
    # shorter wait gives the same answer (the test took 5-6 s, all of it waiting).
    connect = backup._connect

    def impatient(path, **kwargs):
        conn = connect(path, **kwargs)
        conn.execute("PRAGMA busy_timeout=50")
        return conn

    monkeypatch.setattr(backup, "_connect", impatient)
    try:
        with pytest.raises(backup.BackupError, match="Another process is using"):
            backup.restore_database(candidate, db_path=live, home=live.parent, port=free_port())
        assert Path(str(live) + "-wal").exists()  # nothing was swapped or deleted
        assert reader.execute("SELECT count(*) FROM busy_marker").fetchone() == (0,)
    finally:
        reader.close()
        writer.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_restore_sees_a_running_server_on_any_port(tmp_path):
    from tests.gateway_support import running_daemon

    with running_daemon(tmp_path):
        reason = backup.server_running(free_port(), tmp_path)  # not the port it listens on
    assert reason and "serve-lock" in reason and "Stop it first" in reason
    assert backup.server_running(free_port(), tmp_path) is None  # the lock died with the server


def test_backup_and_restore_name_each_step_as_it_begins(tmp_path, record):
    """What a terminal shows while a long backup or restore runs (the copy
    itself is one step of SQLite's: its size is named, not counted)."""
    steps: list[str] = []
    made = backup.backup_database(live_db(), home=tmp_path, dest=tmp_path / "one.sqlite3", stage=steps.append)
    assert [step.split(" ")[0] for step in steps] == ["copying", "checking", "removing"]
    assert re.fullmatch(r"copying [\d.]+ (bytes|KiB|MiB)", steps[0])
    live = tmp_path / "home" / "vetted.sqlite3"
    live.parent.mkdir()
    backup.backup_database(live_db(), home=tmp_path, dest=live)
    steps.clear()
    backup.restore_database(made.path, db_path=live, home=live.parent, port=free_port(), stage=steps.append)
    assert steps[0].startswith("copying the backup (") and steps[1:] == [
        "checking the copy",
        "keeping a safety copy of the current database",
        "putting the backup in place",
    ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_backup_on_a_terminal_shows_its_steps_and_nothing_elsewhere(settings, tmp_path, record, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    run_backup(str(tmp_path / "shown.sqlite3"))
    assert "backup: " in terminal.getvalue() and "checking the copy" in terminal.getvalue()
    quiet = io.StringIO()  # a pipe or a file: no progress lines in it
    monkeypatch.setattr(sys, "stderr", quiet)
    run_backup(str(tmp_path / "quiet.sqlite3"))
    assert "backup: " not in quiet.getvalue()
