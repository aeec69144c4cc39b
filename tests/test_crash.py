"""Crash safety: SIGKILL the daemon in the middle of a stream of agent
proposals (REST and MCP) and reviewer approvals (through the site's forms,
so they are in flight in the daemon too), restart it, and check that
everything acknowledged survived and nothing is half-applied.

On the PostgreSQL pass (marker postgres_slow) the daemon serves a new
database on the test server, and the checks read it over psycopg."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_bridge.daemon_process import start_serve, stress_argv
from tests.conftest import POSTGRES
from tests.gateway_support import PROJECT, free_port, http, wait_for_health

pytestmark = [pytest.mark.slow, pytest.mark.postgres_slow]

PASSWORD = "crash-password-1234"


def manage(env, *args, extra_env=None):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT,
        env={**env, **(extra_env or {})},
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    )


def start_daemon(env, port, log_path):
    process = start_serve(PROJECT, env, port, log_path, append=True)
    wait_for_health(f"http://127.0.0.1:{port}", process)
    return process


def read_acks(path: Path) -> list[dict]:
    items = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            items.append(json.loads(line))
        except ValueError:
            pass
    return items


@pytest.fixture
def home(migrated):
    """A fresh install (a copy of the session's migrated database; on
    PostgreSQL, a database of its own on the test server) with a reviewer
    and one agent: (folder, env, token)."""
    folder = Path(tempfile.mkdtemp(prefix="vetted-crash-"))
    env = migrated.home(folder)
    env.update(
        VETTED_PROPOSALS_PER_MINUTE="0",
        VETTED_READS_PER_MINUTE="0",
        VETTED_OPEN_DISPUTES_PER_AGENT="0",
    )
    manage(
        env,
        "createsuperuser",
        "--noinput",
        "--username",
        "rita",
        "--email",
        "r@example.com",
        extra_env={"DJANGO_SUPERUSER_PASSWORD": PASSWORD},
    )
    token = manage(env, "create_agent", "crasher", "--spaces", "personal,team").stdout.strip().splitlines()[-1]
    return folder, env, token


class Database:
    """The daemon's database read directly: SQLite's file, or PostgreSQL over
    psycopg (``?`` placeholders either way)."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.conn: Any
        if POSTGRES:
            import psycopg

            self.conn = psycopg.connect(env["VETTED_DATABASE_URL"])
        else:
            self.conn = sqlite3.connect(folder / "vetted.sqlite3")

    def execute(self, sql: str, params=()):
        return self.conn.execute(sql.replace("?", "%s") if POSTGRES else sql, params)

    def intact(self) -> bool:
        if POSTGRES:
            return (
                self.execute("SELECT count(*) FROM pg_index WHERE NOT indisvalid OR NOT indisready").fetchone()[0] == 0
            )
        return self.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def close(self) -> None:
        self.conn.close()


def test_sigkill_mid_stream_loses_no_acknowledged_write_and_leaves_nothing_half_done(home):
    folder, env, token = home
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = folder / "serve.log"
    daemon = start_daemon(env, port, log_path)
    workers = []
    for n in range(2):
        workers.append(
            subprocess.Popen(
                stress_argv(
                    "agent", url=base, token=token, name=f"a{n}", seconds=60, out=folder / f"agent-{n}.jsonl", seed=n
                ),
                cwd=PROJECT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    workers.append(
        subprocess.Popen(
            stress_argv(
                "reviewer",
                reviewer="rita",
                seconds=60,
                out=folder / "reviewer.jsonl",
                via="site",
                url=base,
                password=PASSWORD,
            ),
            cwd=PROJECT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    try:
        # Let the stream build up, then kill the daemon mid-write.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            acked = [i for n in range(2) for i in read_acks(folder / f"agent-{n}.jsonl") if i.get("proposal_id")]
            decided = [i for i in read_acks(folder / "reviewer.jsonl") if i.get("result") == "ok"]
            if len(acked) >= 40 and len(decided) >= 10:
                break
            time.sleep(0.2)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(timeout=10)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
    acked = [i["proposal_id"] for n in range(2) for i in read_acks(folder / f"agent-{n}.jsonl") if i.get("proposal_id")]
    assert len(acked) >= 40, "the load never built up"

    db = Database(folder, env)
    try:
        assert db.intact()
        stored = {row[0] for row in db.execute("SELECT public_id FROM reviews_proposal")}
        assert set(acked) <= stored, f"lost acknowledged proposals: {set(acked) - stored}"
        assert len(acked) == len(set(acked))
        # Every proposal has the event that created it, every decided one its decision.
        for public_id, state, action in db.execute("SELECT public_id, state, action FROM reviews_proposal"):
            types = {
                row[0]
                for row in db.execute("SELECT event_type FROM reviews_auditevent WHERE proposal_ref = ?", [public_id])
            }
            assert types & {"proposal.created", "record.disputed"}, public_id
            if state == "accepted" and action in ("create", "revise"):
                assert "proposal.accepted" in types or types & {"record.revised", "record.retired"}, public_id
            if state == "rejected":
                assert types & {"proposal.rejected", "record.dispute_cleared"}, public_id
        # No record exists without its audit event; accepted creates have their record.
        for (public_id,) in db.execute("SELECT public_id FROM reviews_record"):
            assert db.execute("SELECT 1 FROM reviews_auditevent WHERE record_ref = ?", [public_id]).fetchone(), (
                public_id
            )
        missing = db.execute(
            "SELECT public_id FROM reviews_proposal WHERE state = 'accepted' "
            "AND action IN ('create', 'revise') AND result_record_id IS NULL"
        ).fetchall()
        assert not missing
        # A revise never leaves two current versions of one chain.
        links = dict(db.execute("SELECT id, supersedes_id FROM reviews_record"))
        current = [
            row[0] for row in db.execute("SELECT id FROM reviews_record WHERE status IN ('approved', 'disputed')")
        ]
        roots = []
        for record_id in current:
            while links.get(record_id):
                record_id = links[record_id]
            roots.append(record_id)
        assert len(roots) == len(set(roots))
    finally:
        db.close()

    # Restart: the daemon catches the index up (and says so) and serves again.
    before = log_path.read_text(errors="replace")
    daemon = start_daemon(env, port, log_path)
    try:
        startup = log_path.read_text(errors="replace")[len(before) :]
        assert "Traceback" not in startup
        check = subprocess.run(
            [sys.executable, "manage.py", "check_index", "--json"],
            cwd=PROJECT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert check.returncode == 0, check.stdout + check.stderr
        status, _, data = http("GET", base + "/api/v1/search?q=ledger", token=token)
        assert status == 200 and "results" in data
        status, _, data = http(
            "POST",
            base + "/api/v1/proposals",
            token=token,
            body={
                "title": "After the crash",
                "kind": "fact",
                "space": "team",
                "reason": "Checking the restart.",
                "body": "The daemon came back after a SIGKILL and still accepts proposals from agents.",
            },
        )
        assert status == 201, data
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
