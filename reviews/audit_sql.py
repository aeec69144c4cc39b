"""SQL that makes the write log append-only at the database level.

Used by migration 0002 and by the test harness (which must flush tables
between transactional tests; see tests/conftest.py)."""

AUDIT_TABLE = "reviews_auditevent"

CREATE_TRIGGERS = [
    f"""CREATE TRIGGER IF NOT EXISTS auditevent_no_update BEFORE UPDATE ON {AUDIT_TABLE}
        BEGIN SELECT RAISE(ABORT, 'audit log is append-only: UPDATE is not allowed'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS auditevent_no_delete BEFORE DELETE ON {AUDIT_TABLE}
        BEGIN SELECT RAISE(ABORT, 'audit log is append-only: DELETE is not allowed'); END""",
]

DROP_TRIGGERS = [
    "DROP TRIGGER IF EXISTS auditevent_no_update",
    "DROP TRIGGER IF EXISTS auditevent_no_delete",
]
