"""Storage: a real SQLite file through the custom backend, sqlite-vec on every
connection, the configured PRAGMAs, an append-only write log enforced in SQL,
and settings read from the environment that fail loudly on bad values."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import DatabaseError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

import memory_site.settings as base_settings
from common import env
from dbengine import database_engine
from dbengine.audit_log import AUDIT_TABLE
from dbengine.sqlite import base as backend
from reviews.apps import _ensure_audit_triggers
from reviews.models import AuditEvent

MAIN = Path(__file__).resolve().parent.parent
# The write-log tests run on both engines (VETTED_TEST_ENGINE); the rest of
# this file tests SQLite itself and is marked sqlite_only.
TRIGGERS = database_engine(connection).audit_trigger_names
DROP_TRIGGERS = database_engine(connection).audit_triggers()[1]
sqlite_only = pytest.mark.sqlite_only


def scalar(sql: str, params=(), using=connection):
    with using.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def audit_triggers(using=connection) -> set[str]:
    with using.cursor() as cursor:
        if using.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal", [AUDIT_TABLE]
            )
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [AUDIT_TABLE])
        return {row[0] for row in cursor.fetchall()}


def make_event(**overrides) -> AuditEvent:
    fields = {
        "event_type": "test.event",
        "actor_type": "system",
        "actor": "system:test",
        "subject_type": "record",
        "subject_id": "rec_000000000001",
        "record_ref": "rec_000000000001",
        "snippet": "original",
    }
    fields.update(overrides)
    return AuditEvent.objects.create(**fields)


def db_path() -> str:
    return str(connection.settings_dict["NAME"])


# --------------------------------------------------------------------------- sqlite-vec on every connection


@sqlite_only
@pytest.mark.django_db
def test_default_connection_has_sqlite_vec():
    version = scalar("SELECT vec_version()")
    assert isinstance(version, str) and version.startswith("v")


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_connection_opened_in_another_thread_has_sqlite_vec():
    connection.ensure_connection()
    main_raw = connection.connection
    seen = {}

    def worker():
        try:
            from django.db import connection as thread_connection

            seen["version"] = scalar("SELECT vec_version()", using=thread_connection)
            seen["raw"] = thread_connection.connection
        except Exception as exc:  # noqa: BLE001 - reported below
            seen["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=30)
    assert "error" not in seen, seen.get("error")
    assert seen["raw"] is not main_raw, "Django gives each thread its own connection"
    assert seen["version"] == scalar("SELECT vec_version()")


@sqlite_only
@pytest.mark.django_db
def test_extension_loading_is_switched_off_again_after_sqlite_vec_is_loaded():
    with pytest.raises(DatabaseError, match="not authorized"), transaction.atomic():
        scalar("SELECT load_extension('/nonexistent/extension')")


# --------------------------------------------------------------------------- pragmas and transactions


@sqlite_only
@pytest.mark.django_db
def test_journal_mode_is_wal():
    assert scalar("PRAGMA journal_mode").lower() == "wal"


@sqlite_only
@pytest.mark.django_db
def test_busy_timeout_is_5000_ms():
    assert scalar("PRAGMA busy_timeout") == 5000


@sqlite_only
@pytest.mark.django_db
def test_foreign_keys_are_enforced():
    assert scalar("PRAGMA foreign_keys") == 1


@sqlite_only
@pytest.mark.django_db
def test_synchronous_is_normal():
    assert scalar("PRAGMA synchronous") == 1  # NORMAL


@sqlite_only
@pytest.mark.django_db
def test_transaction_mode_immediate_is_configured():
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert connection.transaction_mode == "IMMEDIATE"  # type: ignore[attr-defined]  # SQLite's wrapper only


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_atomic_begins_with_begin_immediate():
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        AuditEvent.objects.exists()
    statements = [q["sql"].strip().upper() for q in captured.captured_queries]
    assert statements[0] == "BEGIN IMMEDIATE", statements


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_atomic_holds_the_write_lock_before_any_write():
    other = backend.DRIVER.connect(db_path(), timeout=0)
    try:
        with transaction.atomic():
            # Nothing written yet: only BEGIN IMMEDIATE explains the held lock.
            with pytest.raises(backend.DRIVER.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")  # released at commit
        other.rollback()
    finally:
        other.close()


@sqlite_only
@pytest.mark.django_db
def test_test_database_is_a_real_file():
    name = db_path()
    assert name != ":memory:" and "mode=memory" not in name
    assert Path(name).is_file()
    # Under pytest-xdist each worker's test database carries its name (pytest-django's suffix).
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    assert Path(name).name == "test_vetted.sqlite3" + (f"_{worker}" if worker else "")
    assert not connection.is_in_memory_db()  # type: ignore[attr-defined]  # SQLite's wrapper only
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA database_list")
        files = {row[1]: row[2] for row in cursor.fetchall()}
    assert os.path.samefile(files["main"], name)


# --------------------------------------------------------------------------- vec0 and FTS5


@sqlite_only
@pytest.mark.django_db
def test_vec0_table_with_cosine_distance_ranks_by_angle_not_length():
    with connection.cursor() as cursor:
        cursor.execute("CREATE VIRTUAL TABLE test_vectors USING vec0(embedding float[3] distance_metric=cosine)")
        # Same direction but far away (cosine 0, L2 9) and close but at 45° (cosine ~0.29, L2 1).
        cursor.execute(
            "INSERT INTO test_vectors(rowid, embedding) VALUES (1, '[10, 0, 0]'), (2, '[1, 1, 0]'), (3, '[0, 0, 1]')"
        )
        cursor.execute(
            "SELECT rowid, distance FROM test_vectors WHERE embedding MATCH '[1, 0, 0]' AND k = 3 ORDER BY distance"
        )
        rows = cursor.fetchall()
    assert [rowid for rowid, _ in rows] == [1, 2, 3]
    assert rows[0][1] == pytest.approx(0.0, abs=1e-6)
    assert rows[1][1] == pytest.approx(1 - 2**-0.5, abs=1e-5)
    assert rows[2][1] == pytest.approx(1.0, abs=1e-6)


@sqlite_only
@pytest.mark.django_db
def test_fts5_trigram_table_matches_substrings():
    with connection.cursor() as cursor:
        cursor.execute("CREATE VIRTUAL TABLE test_text USING fts5(title, body, tokenize='trigram')")
        cursor.execute(
            "INSERT INTO test_text(rowid, title, body) VALUES "
            "(1, 'Billing API', 'The billing API lives in acme/billing-api.'), "
            "(2, 'Deploys', 'Deploys run every weekday from main.')"
        )
        cursor.execute("SELECT rowid FROM test_text WHERE test_text MATCH %s ORDER BY rank", ['"illing-ap"'])
        assert [row[0] for row in cursor.fetchall()] == [1]
        cursor.execute("SELECT rowid FROM test_text WHERE test_text MATCH %s", ["weekday"])
        assert [row[0] for row in cursor.fetchall()] == [2]


# --------------------------------------------------------------------------- the append-only write log


@pytest.mark.django_db
def test_audit_events_can_be_appended():
    before = AuditEvent.objects.count()
    event = make_event()
    assert AuditEvent.objects.count() == before + 1
    assert AuditEvent.objects.get(pk=event.pk).snippet == "original"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "sql",
    [
        f"UPDATE {AUDIT_TABLE} SET snippet = 'rewritten'",
        f"DELETE FROM {AUDIT_TABLE}",
    ],
)
def test_raw_sql_cannot_change_or_delete_audit_events(sql):
    event = make_event()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql)
    assert AuditEvent.objects.get(pk=event.pk).snippet == "original"


@pytest.mark.django_db
def test_raw_update_is_refused_as_an_integrity_error():
    from django.db import IntegrityError

    make_event()
    with pytest.raises(IntegrityError, match="UPDATE is not allowed"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE {AUDIT_TABLE} SET actor = 'mallory'")


@pytest.mark.django_db
def test_orm_cannot_change_or_delete_audit_events():
    event = make_event()
    attempts = [
        lambda: AuditEvent.objects.filter(pk=event.pk).update(snippet="rewritten"),
        lambda: AuditEvent.objects.filter(pk=event.pk).delete(),
        lambda: AuditEvent.objects.get(pk=event.pk).delete(),
        lambda: AuditEvent(
            pk=event.pk,
            **{f: getattr(event, f) for f in ("event_type", "actor_type", "actor", "subject_type", "subject_id")},
            snippet="rewritten",
        ).save(),
    ]
    for attempt in attempts:
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            attempt()
    assert AuditEvent.objects.get(pk=event.pk).snippet == "original"


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_separate_raw_connection_cannot_change_or_delete_audit_events():
    event = make_event()  # committed: this test runs in autocommit
    raw = backend.DRIVER.connect(db_path())
    try:
        for sql in (f"UPDATE {AUDIT_TABLE} SET snippet = 'rewritten'", f"DELETE FROM {AUDIT_TABLE}"):
            with pytest.raises(backend.DRIVER.DatabaseError, match="append-only"):
                raw.execute(sql)
            raw.rollback()
        assert raw.execute(f"SELECT snippet FROM {AUDIT_TABLE} WHERE id = ?", (event.pk,)).fetchone() == ("original",)
        # Appending through the raw connection still works.
        raw.execute(
            f"INSERT INTO {AUDIT_TABLE} (event_type, at, actor_type, actor, subject_type, subject_id, "
            "record_ref, proposal_ref, checksum_before, checksum_after, snippet, extra) "
            "VALUES ('raw.event', '2025-01-01 00:00:00', 'system', 'raw', 'record', 'rec_x', '', '', '', '', "
            "'', '{}')"
        )
        raw.commit()
    finally:
        raw.close()
    assert AuditEvent.objects.filter(event_type="raw.event").count() == 1
    assert AuditEvent.objects.get(pk=event.pk).snippet == "original"


@pytest.mark.django_db
def test_the_migrations_install_the_audit_triggers():
    assert audit_triggers() == TRIGGERS


@pytest.mark.django_db
def test_rerunning_migrate_restores_dropped_triggers():
    with connection.cursor() as cursor:
        for sql in DROP_TRIGGERS:
            cursor.execute(sql)
    assert audit_triggers() == set()
    call_command("migrate", verbosity=0, interactive=False)
    assert audit_triggers() == TRIGGERS
    make_event()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.update(snippet="rewritten")


@pytest.mark.django_db
def test_post_migrate_handler_recreates_dropped_triggers():
    with connection.cursor() as cursor:
        for sql in DROP_TRIGGERS:
            cursor.execute(sql)
    event = make_event()
    AuditEvent.objects.filter(pk=event.pk).update(snippet="editable without triggers")  # proves they were gone
    _ensure_audit_triggers(sender=None, using="default")
    assert audit_triggers() == TRIGGERS
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()


@pytest.mark.django_db
def test_post_migrate_handler_is_idempotent():
    _ensure_audit_triggers(sender=None, using="default")
    _ensure_audit_triggers(sender=None, using="default")
    assert audit_triggers() == TRIGGERS


# --------------------------------------------------------------------------- environment helpers


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1", True),
        ("TRUE", True),
        (" yes ", True),
        ("on", True),
        ("0", False),
        ("False", False),
        ("no", False),
        ("OFF", False),
    ],
)
def test_env_bool_reads_true_and_false_words(monkeypatch, value, expected):
    monkeypatch.setenv("VETTED_TEST_FLAG", value)
    assert env.env_bool("VETTED_TEST_FLAG", not expected) is expected


@pytest.mark.parametrize("value", [None, "", "   "])
def test_env_helpers_return_defaults_when_unset_or_blank(monkeypatch, value):
    for name in ("VETTED_TEST_FLAG", "VETTED_TEST_INT", "VETTED_TEST_LIST", "VETTED_TEST_KINDS", "VETTED_TEST_STR"):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert env.env_bool("VETTED_TEST_FLAG", True) is True
    assert env.env_bool("VETTED_TEST_FLAG", False) is False
    assert env.env_int("VETTED_TEST_INT", 7, minimum=1, maximum=9) == 7
    default_list = ["a", "b"]
    got = env.env_list("VETTED_TEST_LIST", default_list)
    assert got == ["a", "b"] and got is not default_list
    default_kinds = {"fact": 180}
    kinds = env.env_kinds("VETTED_TEST_KINDS", default_kinds)
    assert kinds == {"fact": 180} and kinds is not default_kinds
    assert env.env_str("VETTED_TEST_STR", "fallback") == "fallback"


@pytest.mark.parametrize("value", ["maybe", "2", "yess", "tru e"])
def test_env_bool_rejects_other_values_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("VETTED_TEST_FLAG", value)
    with pytest.raises(ImproperlyConfigured, match="VETTED_TEST_FLAG") as info:
        env.env_bool("VETTED_TEST_FLAG", False)
    assert "not a boolean" in str(info.value)


@pytest.mark.parametrize(
    "value, message",
    [
        ("ten", "not an integer"),
        ("1.5", "not an integer"),
        ("0", "below the minimum 1"),
        ("101", "above the maximum 100"),
    ],
)
def test_env_int_rejects_bad_values_naming_the_variable(monkeypatch, value, message):
    monkeypatch.setenv("VETTED_TEST_INT", value)
    with pytest.raises(ImproperlyConfigured, match="VETTED_TEST_INT") as info:
        env.env_int("VETTED_TEST_INT", 5, minimum=1, maximum=100)
    assert message in str(info.value)


def test_env_int_reads_a_number_within_bounds(monkeypatch):
    monkeypatch.setenv("VETTED_TEST_INT", " 42 ")
    assert env.env_int("VETTED_TEST_INT", 5, minimum=1, maximum=100) == 42


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv("VETTED_TEST_LIST", " vetted.example.com, ,localhost ,")
    assert env.env_list("VETTED_TEST_LIST", ["127.0.0.1"]) == ["vetted.example.com", "localhost"]


def test_env_list_rejects_a_value_with_no_items(monkeypatch):
    monkeypatch.setenv("VETTED_TEST_LIST", " , ")
    with pytest.raises(ImproperlyConfigured, match="VETTED_TEST_LIST"):
        env.env_list("VETTED_TEST_LIST", ["127.0.0.1"])


def test_env_kinds_extends_the_defaults(monkeypatch):
    monkeypatch.setenv("VETTED_TEST_KINDS", "runbook:90, Fact:30,,")
    assert env.env_kinds("VETTED_TEST_KINDS", {"fact": 180, "event": 730}) == {"fact": 30, "event": 730, "runbook": 90}


@pytest.mark.parametrize(
    "value, message",
    [
        ("runbook", "is not 'kind:days'"),
        ("run book:90", "is not 'kind:days'"),
        ("9lives:90", "is not 'kind:days'"),
        (":90", "is not 'kind:days'"),
        ("runbook:ninety", "days must be an integer"),
        ("runbook:0", "between 1 and 3650"),
        ("runbook:3651", "between 1 and 3650"),
    ],
)
def test_env_kinds_rejects_bad_items_naming_the_variable(monkeypatch, value, message):
    monkeypatch.setenv("VETTED_TEST_KINDS", f"fact:10,{value}")
    with pytest.raises(ImproperlyConfigured, match="VETTED_TEST_KINDS") as info:
        env.env_kinds("VETTED_TEST_KINDS", {"fact": 180})
    assert message in str(info.value)


# --------------------------------------------------------------------------- the secret key


PRINT_KEY = (
    "import django,os; os.environ['DJANGO_SETTINGS_MODULE']='memory_site.settings'; "
    "from django.conf import settings; print(settings.SECRET_KEY)"
)


def run_settings(home: Path, **env_vars) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("VETTED_") and k != "DJANGO_SETTINGS_MODULE"}
    environ.update({"VETTED_HOME": str(home), **env_vars})
    return subprocess.run(
        [sys.executable, "-c", PRINT_KEY], cwd=MAIN, env=environ, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow  # starts a Python process
def test_secret_key_is_generated_once_and_kept_private(tmp_path):
    home = tmp_path / "home"
    first = run_settings(home)
    assert first.returncode == 0, first.stderr
    second = run_settings(home)
    assert second.returncode == 0, second.stderr
    key = first.stdout.strip()
    assert len(key) >= 32
    assert second.stdout.strip() == key
    key_file = home / "secret_key"
    assert key_file.read_text(encoding="ascii").strip() == key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


@pytest.mark.slow  # starts a Python process
def test_secret_keys_differ_between_homes(tmp_path):
    one, two = run_settings(tmp_path / "one"), run_settings(tmp_path / "two")
    assert one.returncode == two.returncode == 0, (one.stderr, two.stderr)
    assert one.stdout.strip() != two.stdout.strip()


@pytest.mark.slow  # starts a Python process
def test_secret_key_from_the_environment_wins_and_writes_no_file(tmp_path):
    key = "k" * 40
    result = run_settings(tmp_path, VETTED_SECRET_KEY=key)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == key
    assert not (tmp_path / "secret_key").exists()


@pytest.mark.slow  # starts a Python process
def test_short_secret_key_from_the_environment_stops_the_process(tmp_path):
    result = run_settings(tmp_path, VETTED_SECRET_KEY="too-short")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "VETTED_SECRET_KEY" in result.stderr
    assert result.stdout.strip() == ""


@pytest.mark.slow  # starts a Python process
def test_a_too_short_key_file_stops_the_process(tmp_path):
    (tmp_path / "secret_key").write_text("short", encoding="ascii")
    result = run_settings(tmp_path)
    assert result.returncode != 0
    assert "shorter than 32 characters" in result.stderr


@pytest.mark.slow  # starts a Python process
def test_bad_debug_value_stops_the_process_naming_the_variable(tmp_path):
    result = run_settings(tmp_path, VETTED_DEBUG="maybe")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "VETTED_DEBUG='maybe'" in result.stderr


@pytest.mark.slow  # starts a Python process
def test_bad_kinds_value_stops_the_process_naming_the_variable(tmp_path):
    result = run_settings(tmp_path, VETTED_KINDS="runbook")
    assert result.returncode != 0
    assert "VETTED_KINDS" in result.stderr


def _intercept_key_link(monkeypatch, before_link):
    """Call ``before_link(src)`` each time the key's temporary file is linked into place."""
    original = os.link

    def patched(src, dst, *args, **kwargs):
        if Path(dst).name == "secret_key":
            before_link(Path(src))
        return original(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "link", patched)


def test_secret_key_file_is_never_readable_by_others(monkeypatch, tmp_path):
    modes = []
    _intercept_key_link(monkeypatch, lambda src: modes.append(stat.S_IMODE(src.stat().st_mode)))
    monkeypatch.setattr(base_settings, "VETTED_HOME", tmp_path)
    monkeypatch.delenv("VETTED_SECRET_KEY", raising=False)
    old_umask = os.umask(0o022)
    try:
        key = base_settings._secret_key()
    finally:
        os.umask(old_umask)
    assert len(key) >= 32
    assert modes, "the key was not written through a temporary file"
    # Already private while it was being written, and afterwards.
    assert all(mode & 0o077 == 0 for mode in modes), [oct(m) for m in modes]
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) & 0o077 == 0
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]  # no temporary file left behind


def test_two_processes_starting_at_once_get_the_same_key(monkeypatch, tmp_path):
    first_ready, second_done = threading.Event(), threading.Event()
    results: dict[str, object] = {}
    calls = []

    def first_writer_pauses(src):
        calls.append(src)
        if len(calls) == 1:  # the first writer stops just before linking its key
            first_ready.set()
            second_done.wait(timeout=5)

    _intercept_key_link(monkeypatch, first_writer_pauses)
    monkeypatch.setattr(base_settings, "VETTED_HOME", tmp_path)
    monkeypatch.delenv("VETTED_SECRET_KEY", raising=False)

    def run(label, wait_for=None):
        try:
            if wait_for is not None:
                assert wait_for.wait(timeout=5)
            results[label] = base_settings._secret_key()
        except Exception as exc:  # noqa: BLE001 - the assertion reports it
            results[label] = exc
        finally:
            if label == "second":
                second_done.set()

    first = threading.Thread(target=run, args=("first",))
    second = threading.Thread(target=run, args=("second", first_ready))
    first.start()
    second.start()
    first.join(timeout=10)
    second.join(timeout=10)
    assert len(calls) == 2, "both writers should have raced to link a key"
    assert isinstance(results["first"], str) and len(results["first"]) >= 32, results
    assert results["second"] == results["first"], results
    assert (tmp_path / "secret_key").read_text().strip() == results["first"]


# --------------------------------------------------------------------------- the driver


@pytest.mark.slow  # starts a Python process
def test_backend_uses_sqlean_exactly_when_stdlib_sqlite3_cannot_load_extensions():
    probe = subprocess.run(
        [sys.executable, "-I", "-c", "import sqlite3; print(hasattr(sqlite3.Connection, 'enable_load_extension'))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    stdlib_can_load = probe.stdout.strip() == "True"
    assert probe.stdout.strip() in ("True", "False")
    # In this process "sqlite3" may already be swapped for sqlean; the backend kept the real one.
    assert stdlib_can_load == hasattr(backend._stdlib_sqlite3.Connection, "enable_load_extension")
    assert (sys.modules["sqlite3"] is backend._stdlib_sqlite3) == stdlib_can_load
    expected = "sqlite3 (stdlib)" if stdlib_can_load else "sqlean"
    assert expected == backend.DRIVER_NAME
    assert backend.DRIVER.__name__ == ("sqlite3.dbapi2" if stdlib_can_load else "sqlean.dbapi2")


def test_djangos_sqlite_backend_uses_the_chosen_driver():
    from django.db.backends.sqlite3 import base as django_sqlite

    assert django_sqlite.Database is backend.DRIVER  # type: ignore[attr-defined]  # a module global, not exported


@sqlite_only
@pytest.mark.django_db
def test_the_live_connection_comes_from_the_chosen_driver():
    connection.ensure_connection()
    assert isinstance(connection.connection, backend.DRIVER.Connection)


@pytest.mark.slow  # starts a Python process
def test_a_fresh_interpreter_picks_the_same_driver_and_loads_sqlite_vec(tmp_path):
    code = (
        "import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'memory_site.settings'; django.setup(); "
        "from dbengine.sqlite import base; from django.db import connection; "
        "c = connection.cursor(); c.execute('select vec_version()'); "
        "print(base.DRIVER_NAME + '|' + c.fetchone()[0])"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("VETTED_") and k != "DJANGO_SETTINGS_MODULE"}
    environ["VETTED_HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=MAIN, env=environ, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    name, version = result.stdout.strip().split("|")
    assert name == backend.DRIVER_NAME
    assert version.startswith("v")
