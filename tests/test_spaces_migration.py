"""Migration 0007 (spaces) on a database made by main at e4b4632, before
spaces existed: tests/data/migration/main-e4b4632.sqlite3, built by
tests/data/migration/build_fixture.py with that commit's code (two staff
accounts alice and bob, agents, records in all three spaces with a revision,
a dispute, a retirement, pending and rejected proposals, a revoked agent).
Migrating it must keep every record, proposal, agent and audit row, and every
approval checksum must still verify."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from reviews.checksum import checksum_of, is_approved_copy

# A SQLite fixture file migrated by a subprocess: SQLite only (the PostgreSQL
# pass would hand the subprocess its VETTED_DATABASE_URL).
pytestmark = [pytest.mark.slow, pytest.mark.sqlite_only]

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "migration" / "main-e4b4632.sqlite3"


def rows(db: Path, table: str, exclude: tuple[str, ...] = ()) -> list[dict]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        found = conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()  # noqa: S608 (fixed names)
    return [{k: row[k] for k in row.keys() if k not in exclude} for row in found]  # noqa: SIM118 (a Row iterates its values)


def migrate(db: Path, tmp_path: Path) -> None:
    env = {**os.environ, "VETTED_HOME": str(tmp_path / "home"), "VETTED_DB_PATH": str(db), "VETTED_EMBEDDER": "fake"}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def old_db(tmp_path) -> Path:
    db = tmp_path / "vetted.sqlite3"
    shutil.copy(FIXTURE, db)
    return db


# The space was called scope in these versions: its columns and the key inside the approved and
# reviewer-changed content were renamed later (the values are the same).
_RENAMED = {"scope": "space", "scopes": "spaces"}
_CONTENT = ("approved_content", "reviewer_changes")


def renamed(found: list[dict]) -> list[dict]:
    out = []
    for row in found:
        row = {_RENAMED.get(key, key): value for key, value in row.items()}
        for key in _CONTENT:
            if isinstance(row.get(key), str) and row[key].startswith("{"):
                row[key] = {_RENAMED.get(k, k): v for k, v in json.loads(row[key]).items()}
        out.append(row)
    return out


def test_migrating_a_database_of_main_keeps_every_record_proposal_agent_and_audit_row(old_db, tmp_path):
    before = {t: rows(old_db, t) for t in ("reviews_record", "reviews_proposal", "reviews_auditevent")}
    agents_before = rows(old_db, "reviews_agent")
    assert len(before["reviews_record"]) == 6 and len(before["reviews_proposal"]) == 9
    migrate(old_db, tmp_path)
    assert renamed(rows(old_db, "reviews_record")) == renamed(before["reviews_record"])
    # 0007 (resubmits, from main after the fixture was made) adds two columns, empty on every old row.
    added_columns = ("resubmits_id", "resubmit_reason")
    assert renamed(rows(old_db, "reviews_proposal", exclude=added_columns)) == renamed(before["reviews_proposal"])
    assert {(p["resubmits_id"], p["resubmit_reason"]) for p in rows(old_db, "reviews_proposal")} == {(None, "")}
    audit_after = rows(old_db, "reviews_auditevent")
    assert audit_after[: len(before["reviews_auditevent"])] == before["reviews_auditevent"]
    added = audit_after[len(before["reviews_auditevent"]) :]
    assert [(e["event_type"], e["subject_id"]) for e in added] == [
        ("space.created", "personal"),
        ("space.created", "team"),
        ("space.created", "system"),
    ]
    assert renamed(rows(old_db, "reviews_agent", exclude=("owner_id",))) == renamed(agents_before)


def test_every_migrated_checksum_still_verifies(old_db, tmp_path):
    migrate(old_db, tmp_path)
    records = rows(old_db, "reviews_record")
    for record in records:
        content = {**record, "tags": json.loads(record["tags"])}
        assert checksum_of(content) == record["approved_checksum"], record["public_id"]
        assert is_approved_copy(json.loads(record["approved_content"]), record["approved_checksum"])
    assert {r["space"] for r in records} == {"personal", "team", "system"}


def test_the_first_reviewer_owns_the_three_spaces_and_other_staff_review_the_shared_ones(old_db, tmp_path):
    migrate(old_db, tmp_path)
    with sqlite3.connect(old_db) as conn:
        spaces = conn.execute("SELECT slug, kind, name, required_approvals FROM reviews_space ORDER BY slug").fetchall()
        members = conn.execute(
            "SELECT s.slug, u.username, m.role FROM reviews_membership m JOIN reviews_space s ON s.id = m.space_id "
            "JOIN auth_user u ON u.id = m.user_id ORDER BY s.slug, u.username"
        ).fetchall()
        owners = dict(
            conn.execute(
                "SELECT a.name, u.username FROM reviews_agent a LEFT JOIN auth_user u ON u.id = a.owner_id"
            ).fetchall()
        )
        triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert spaces == [
        ("personal", "personal", "Personal (alice)", 1),
        ("system", "system", "System", 1),
        ("team", "team", "Team", 1),
    ]
    assert members == [
        ("personal", "alice", "owner"),  # a personal space has exactly one member
        ("system", "alice", "owner"),
        ("system", "bob", "reviewer"),
        ("team", "alice", "owner"),
        ("team", "bob", "reviewer"),
    ]
    assert owners == {"alice-laptop": "alice", "team-bot": "alice", "gone-bot": "alice"}
    assert {"auditevent_no_update", "auditevent_no_delete"} <= triggers  # the write log stays append-only


def test_a_grant_of_a_space_the_agents_person_is_not_a_member_of_is_removed_and_audited(old_db, tmp_path):
    # Before spaces, bob (staff) could have made an agent reading the personal space.
    with sqlite3.connect(old_db) as conn:
        conn.execute("UPDATE reviews_agent SET created_by = 'bob' WHERE name = 'alice-laptop'")
    migrate(old_db, tmp_path)
    with sqlite3.connect(old_db) as conn:
        spaces = conn.execute("SELECT spaces FROM reviews_agent WHERE name = 'alice-laptop'").fetchone()[0]
        event = conn.execute(
            "SELECT actor, extra FROM reviews_auditevent WHERE event_type = 'agent.grants_narrowed'"
        ).fetchall()
    assert json.loads(spaces) == ["team"]
    assert [(actor, json.loads(extra)) for actor, extra in event] == [
        ("migration 0008_spaces", {"removed": ["personal"], "owner": "bob"})
    ]
