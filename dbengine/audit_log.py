"""SQL that makes the write log append-only at the database level.

Used by migration 0002 and by the test harness (which must flush tables
between transactional tests; see tests/conftest.py), through each engine's
``audit_triggers()``; CREATE_TRIGGERS / DROP_TRIGGERS are SQLite's."""

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

# PostgreSQL. Row triggers refuse UPDATE and DELETE; TRUNCATE skips
# row triggers, so a statement trigger refuses it too. restrict_violation is an
# integrity error class (23001), so Django raises IntegrityError as on SQLite.
# CREATE OR REPLACE (PostgreSQL 14+) keeps the post_migrate re-run idempotent.
POSTGRES_CREATE_TRIGGERS = [
    """CREATE OR REPLACE FUNCTION auditevent_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'audit log is append-only: % is not allowed', TG_OP USING ERRCODE = 'restrict_violation';
        END $$""",
    f"""CREATE OR REPLACE TRIGGER auditevent_no_update BEFORE UPDATE ON {AUDIT_TABLE}
        FOR EACH ROW EXECUTE FUNCTION auditevent_refuse()""",
    f"""CREATE OR REPLACE TRIGGER auditevent_no_delete BEFORE DELETE ON {AUDIT_TABLE}
        FOR EACH ROW EXECUTE FUNCTION auditevent_refuse()""",
    f"""CREATE OR REPLACE TRIGGER auditevent_no_truncate BEFORE TRUNCATE ON {AUDIT_TABLE}
        FOR EACH STATEMENT EXECUTE FUNCTION auditevent_refuse()""",
]

POSTGRES_DROP_TRIGGERS = [
    f"DROP TRIGGER IF EXISTS auditevent_no_update ON {AUDIT_TABLE}",
    f"DROP TRIGGER IF EXISTS auditevent_no_delete ON {AUDIT_TABLE}",
    f"DROP TRIGGER IF EXISTS auditevent_no_truncate ON {AUDIT_TABLE}",
]

# Trigger names, as each engine's catalogue lists them.
TRIGGER_NAMES = frozenset({"auditevent_no_update", "auditevent_no_delete"})
POSTGRES_TRIGGER_NAMES = TRIGGER_NAMES | {"auditevent_no_truncate"}


# --------------------------------------------------------------------------- a role that cannot rewrite the log
# Besides the triggers, the application's role gets no UPDATE, DELETE
# or TRUNCATE on the write log. A table's owner holds every privilege on it,
# so the log is handed to a role of its own (NOLOGIN, never granted to the
# application's role), which grants the application SELECT and INSERT only.
# Applied by a superuser (ALTER ... OWNER needs one, or membership of the new
# owner, which would hand the privileges back): `manage.py pg_roles`.
ROLE_NAME = r"^[a-z_][a-z0-9_]{0,62}$"


def log_role_grants(app_role: str, log_owner: str) -> list[str]:
    """The statements, in order, for database roles already checked against ROLE_NAME."""
    return [
        f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{log_owner}') THEN "
        f"CREATE ROLE {log_owner} NOLOGIN; END IF; END $$",
        f"REVOKE {log_owner} FROM {app_role}",
        # The identity sequence follows its table to the new owner.
        f"ALTER TABLE {AUDIT_TABLE} OWNER TO {log_owner}",
        f"ALTER FUNCTION auditevent_refuse() OWNER TO {log_owner}",
        f"REVOKE ALL ON TABLE {AUDIT_TABLE} FROM PUBLIC, {app_role}",
        f"GRANT SELECT, INSERT ON TABLE {AUDIT_TABLE} TO {app_role}",
        f"DO $$ BEGIN EXECUTE format('GRANT USAGE ON SEQUENCE %s TO {app_role}', "
        f"pg_get_serial_sequence('{AUDIT_TABLE}', 'id')); END $$",
    ]
