"""Copy a whole instance from the configured SQLite database into an empty
PostgreSQL database: ``manage.py copy_database --to postgresql://…``.

What is copied, with the ids it had:
- every row of every Django model (records, proposals and approvals,
  agents with their token hashes, so tokens keep working; spaces,
  memberships, OAuth clients, grants, codes and tokens; users, sessions,
  the outbox; the write log);
- the retrieval tables, which hold state no model has: the approved text
  on file for each record (an edited record's approved text lives only
  there), its checksum, the chunks with their embeddings, the vectors
  (read back from vec0, so nothing is re-embedded), the queues and meta.

How it stays safe:
- The target must be empty: no tables at all, or only what ``migrate``
  itself writes (the migration history, content types, permissions and
  the default spaces, which are replaced by the source's). Anything else
  and the copy refuses, naming the table.
- One transaction on the target, with foreign keys checked at commit
  (Django makes them DEFERRABLE INITIALLY DEFERRED), so the tables can be
  filled in any order and a failure leaves the target as it was.
- The write log is only ever INSERTed into, never updated, deleted or
  truncated, so its append-only triggers (and a role without those grants,
  pg_roles) allow the copy as they allow the application.
- Values go through each field's own conversion (from_db_value on the
  SQLite side, get_db_prep_save on PostgreSQL's) and raw INSERTs, not
  bulk_create, which would run pre_save and rewrite auto_now timestamps.
- Id sequences are set past the highest id SQLite ever gave out
  (sqlite_sequence, which is above max(id) when the newest rows were
  deleted), so an id is never reused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from .. import tables as tbl
from .postgres import PostgresRetrieval
from .postgres import ddl as pg_schema

TARGET = "copy_target"
BATCH = 1000

# Tables migrate fills on a fresh database; the copy replaces their rows.
MIGRATE_FILLS = {"django_content_type", "auth_permission", "reviews_space"}
# The retrieval tables with their columns (the generated tsv is PostgreSQL's own).
RAW_TABLES = {
    tbl.META: ("key", "value"),
    tbl.DOCS: ("id", "space", "kind", "title", "body", "tags", "checksum", "edited", "state"),
    tbl.CHUNKS: ("id", "record_id", "seq", "text_hash", "text", "embedding", "space"),
}
# Filled by the target's own triggers while copying: set to the source's afterwards.
QUEUES = {tbl.QUEUE: ("record_id",), tbl.DIRTY: ("record_id", "gen")}


class CopyRefused(Exception):
    """The copy cannot start; the message says why and what to do."""


@dataclass
class CopySummary:
    rows: dict[str, int] = field(default_factory=dict)
    vectors: int = 0


def model_tables() -> list[type[models.Model]]:
    """Every concrete model with a table of its own (many-to-many tables included)."""
    found = []
    for model in apps.get_models(include_auto_created=True):
        meta = model._meta
        if meta.managed and not meta.proxy and not meta.swapped:
            found.append(model)
    return found


def open_target(entry: dict[str, object]) -> BaseDatabaseWrapper:
    """The target as the connection alias TARGET (from a Django DATABASES
    entry), held in this thread only and not added to settings.DATABASES, so
    nothing else in the process (checks, other threads) ever opens it."""
    from django.db.utils import load_backend

    close_target()
    # (configure_settings fills in the defaults, and insists on a default entry: the current one, unchanged.)
    both = connections.configure_settings({"default": dict(connections.settings["default"]), TARGET: entry})
    wrapper: BaseDatabaseWrapper = load_backend(str(both[TARGET]["ENGINE"])).DatabaseWrapper(both[TARGET], TARGET)
    connections[TARGET] = wrapper
    return wrapper


def close_target() -> None:
    wrapper = getattr(connections._connections, TARGET, None)  # type: ignore[attr-defined]
    if wrapper is not None:
        wrapper.close()
        del connections[TARGET]


def refuse_unless_ready(source: BaseDatabaseWrapper, target: BaseDatabaseWrapper) -> None:
    """Raise CopyRefused unless source is SQLite, fully migrated, and target is PostgreSQL and empty."""
    from django.db.migrations.executor import MigrationExecutor

    if source.vendor != "sqlite":
        raise CopyRefused(
            f"copy_database copies from SQLite, but the configured database is {source.vendor}; "
            "unset VETTED_DATABASE_URL so the SQLite file in VETTED_HOME is the source."
        )
    if target.vendor != "postgresql":
        raise CopyRefused("--to must be a postgresql:// URL.")
    executor = MigrationExecutor(source)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise CopyRefused("The SQLite database has unapplied migrations: run `python manage.py migrate` first.")
    tables = set(target.introspection.table_names())
    with target.cursor() as cursor:
        for table in sorted(tables - MIGRATE_FILLS - {"django_migrations"}):
            cursor.execute(f'SELECT EXISTS (SELECT 1 FROM "{table}")')
            if cursor.fetchone()[0]:
                raise CopyRefused(
                    f"The target database is not empty: table {table} has rows. copy_database only copies into "
                    "an empty database (or one `migrate` alone has touched); create one with "
                    "`createdb NAME` (or `CREATE DATABASE name;`) and pass its URL."
                )


def migrate_target(alias: str = TARGET) -> None:
    """``migrate`` on the target (the alias open_target made), in this
    process: every data migration writes through the database it migrates
    (``schema_editor.connection.alias``), so the default database is left
    alone (tests/test_migrate_database.py)."""
    from django.core.management import call_command
    from django.core.management.base import CommandError
    from django.db import DatabaseError

    try:
        call_command("migrate", database=alias, interactive=False, verbosity=0)
    except (CommandError, DatabaseError) as exc:
        raise CopyRefused(f"`migrate` on the target failed: {exc}") from None


def _no_progress(rows: int) -> None:
    pass


def rows_to_copy() -> int:
    """How many rows copy_database will copy from the default database (for a progress bar)."""
    source = connections["default"]
    total = sum(model._base_manager.using(source.alias).count() for model in model_tables())
    with source.cursor() as src:
        tables = [*RAW_TABLES, *QUEUES] + ([tbl.VEC] if schema_has(src, tbl.VEC) else [])
        for table in tables:
            src.execute(f"SELECT count(*) FROM {table}")
            total += int(src.fetchone()[0])
    return total


def _models_rows(
    source: BaseDatabaseWrapper,
    target: BaseDatabaseWrapper,
    summary: CopySummary,
    progress: Callable[[int], None] = _no_progress,
) -> None:
    with target.cursor() as out:
        for model in model_tables():
            meta = model._meta
            fields = list(meta.concrete_fields)
            table = meta.db_table
            if table in MIGRATE_FILLS:
                out.execute(f'DELETE FROM "{table}"')  # never the write log (not in MIGRATE_FILLS)
            columns = ", ".join(f'"{f.column}"' for f in fields)
            sql = f'INSERT INTO "{table}" ({columns}) VALUES ({", ".join(["%s"] * len(fields))})'
            rows = model._base_manager.using(source.alias).order_by("pk").values_list(*[f.attname for f in fields])
            count = 0
            batch: list[list[Any]] = []
            for row in rows.iterator(chunk_size=BATCH):
                batch.append([f.get_db_prep_save(v, connection=target) for f, v in zip(fields, row, strict=True)])
                if len(batch) >= BATCH:
                    out.executemany(sql, batch)
                    progress(len(batch))
                    count, batch = count + len(batch), []
            if batch:
                out.executemany(sql, batch)
                progress(len(batch))
                count += len(batch)
            summary.rows[table] = count


def _raw_rows(
    src: CursorWrapper,
    out: CursorWrapper,
    table: str,
    columns: tuple[str, ...],
    summary: CopySummary,
    progress: Callable[[int], None] = _no_progress,
) -> None:
    names = ", ".join(columns)
    src.execute(f"SELECT {names} FROM {table} ORDER BY 1")
    # An identity column refuses given values unless told (chunk ids are vector keys: kept).
    overriding = " OVERRIDING SYSTEM VALUE" if table == tbl.CHUNKS else ""
    sql = f"INSERT INTO {table} ({names}){overriding} VALUES ({', '.join(['%s'] * len(columns))})"
    if table == tbl.META:
        # The target's triggers wrote tokens of their own while copying.
        sql += " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    count = 0
    while rows := src.fetchmany(BATCH):
        out.executemany(sql, [list(row) for row in rows])
        progress(len(rows))
        count += len(rows)
    summary.rows[table] = count


def _vectors(
    src: CursorWrapper, out: CursorWrapper, summary: CopySummary, progress: Callable[[int], None] = _no_progress
) -> None:
    """vec0's rows into pgvector's table, then one HNSW index per space (built after the rows: faster)."""
    if not schema_has(src, tbl.VEC):
        return
    src.execute(f"SELECT value FROM {tbl.META} WHERE key = 'dimension'")
    row = src.fetchone()
    if row is None:
        return
    create = pg_schema.vec_table(int(row[0]), tbl.current_spaces(out))
    out.execute(create[0])
    out.execute(create[1])
    src.execute(f"SELECT rowid, space, held, embedding FROM {tbl.VEC} ORDER BY rowid")
    sql = f"INSERT INTO {tbl.VEC} (rowid, space, held, embedding) VALUES (%s, %s, %s, %s::vector)"
    while rows := src.fetchmany(BATCH):
        engine = PostgresRetrieval()
        out.executemany(sql, [[rowid, space, held, engine.vector_value(blob)] for rowid, space, held, blob in rows])
        progress(len(rows))
        summary.vectors += len(rows)
    for sql in create[2:]:
        out.execute(sql)


def schema_has(cursor: CursorWrapper, table: str) -> bool:
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [table])
    return cursor.fetchone() is not None


def _sequences(src: CursorWrapper, out: CursorWrapper) -> None:
    """Each id sequence past the highest id SQLite ever gave out in that table."""
    given: dict[str, int] = {}
    if schema_has(src, "sqlite_sequence"):  # made with the first AUTOINCREMENT table
        src.execute("SELECT name, seq FROM sqlite_sequence")
        given = dict(src.fetchall())
    tables = [(m._meta.db_table, m._meta.pk.column) for m in model_tables() if m._meta.pk.get_internal_type()]
    tables.append((tbl.CHUNKS, "id"))
    for table, column in tables:
        out.execute("SELECT pg_get_serial_sequence(%s, %s)", [table, column])
        sequence = out.fetchone()[0]
        if sequence is None:
            continue  # a key with no sequence (e.g. the session key)
        out.execute(f'SELECT coalesce(max("{column}"), 0) FROM "{table}"')
        highest = max(int(out.fetchone()[0]), int(given.get(table) or 0))
        # setval(.., 1, false): the next id is 1 (an empty table).
        out.execute("SELECT setval(%s, %s, %s)", [sequence, max(highest, 1), highest > 0])


def copy_database(target: BaseDatabaseWrapper, progress: Callable[[int], None] = _no_progress) -> CopySummary:
    """Copy the default (SQLite) database into ``target``, a migrated, empty
    PostgreSQL database, in one transaction (see the module docstring).
    ``progress`` hears how many rows each batch copied (rows_to_copy() in all)."""
    source = connections["default"]
    summary = CopySummary()
    # REPEATABLE READ is SQLite's only isolation: one read transaction sees one moment.
    with transaction.atomic(using=source.alias), transaction.atomic(using=target.alias):
        with target.cursor() as out:
            out.execute("SET CONSTRAINTS ALL DEFERRED")
        _models_rows(source, target, summary, progress)
        with source.cursor() as src, target.cursor() as out:
            for table, columns in RAW_TABLES.items():
                _raw_rows(src, out, table, columns, summary, progress)
            for table, columns in QUEUES.items():
                out.execute(f"DELETE FROM {table}")
                _raw_rows(src, out, table, columns, summary, progress)
            pg_schema.ensure_partitions(out)  # the keyword indexes of the copied spaces
            _vectors(src, out, summary, progress)
            _sequences(src, out)
    return summary
