"""The approved content of every record, as the indexes see it.

``reconcile()`` drains retrieval_queue (filled by triggers on reviews_record)
into retrieval_doc: a record whose current text matches its approval
checksum gets that text indexed; a record edited since approval gets its
kept approved copy (Record.approved_text(), checked against the checksum),
or else keeps the approved text last indexed, marked ``edited`` either way
(so it is counted as withheld on what was approved, never on what nobody
reviewed); a record with no approved text left anywhere is not indexed. Each document's state (``live``
or ``held``) is decided by the domain's rule, Record.objects.current(), plus
the checksum: nothing here restates what "deliverable" means.

States depend on the date (a record becomes overdue at midnight without any
write), so each space is swept once per day, the first time it is searched
(``swept_on:<space>`` in retrieval_meta). A reader's search sweeps only its
own spaces, so other spaces' sweeps never cost it time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from datetime import date

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from dbengine import database_engine
from reviews import actions
from reviews.models import Record
from reviews.space_access import space_slugs

from . import tables

BATCH = 500

# One index writer per process: reconcile and the vector sync (index.sync)
# share it; reentrant because sync reconciles first.
writer_lock = threading.RLock()


def vec_exists(cursor: CursorWrapper) -> bool:
    return database_engine(cursor).table_exists(cursor, tables.VEC)


def set_vector_state(cursor: CursorWrapper, states: dict[int, str]) -> None:
    """Follow document states in vec0's ``held`` column (the triggers cannot:
    vec0 is created later, by the indexer)."""
    if not states or not vec_exists(cursor):
        return
    marks = ",".join(["%s"] * len(states))
    cursor.execute(f"SELECT id, record_id FROM {tables.CHUNKS} WHERE record_id IN ({marks})", list(states))
    for chunk_id, record_id in cursor.fetchall():
        cursor.execute(
            f"UPDATE {tables.VEC} SET held = %s WHERE rowid = %s", [int(states[record_id] == tables.HELD), chunk_id]
        )


def _needed(sweep_spaces: Iterable[str], today: date) -> bool:
    cursor = connection.cursor()
    with cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {tables.QUEUE})")
        if cursor.fetchone()[0]:
            return True
        if not sweep_spaces:
            return False
        cursor.execute(f"SELECT key, value FROM {tables.META} WHERE key LIKE 'swept_on:%%'")
        swept = dict(cursor.fetchall())
    return any(swept.get(f"swept_on:{space}") != today.isoformat() for space in sweep_spaces)


def reconcile(sweep_spaces: Iterable[str] = (), today: date | None = None) -> int:
    """Bring retrieval_doc in line with the records; sweep ``sweep_spaces``
    for date changes if not done today. Returns how many documents changed.
    Costs one SELECT when there is nothing to do."""
    today = today or timezone.localdate()
    wanted = set(sweep_spaces)
    # No spaces' query without spaces to sweep: index.sync reconciles once more
    # in every search, and that query was most of the call's CPU.
    sweep_spaces = [s for s in space_slugs() if s in wanted] if wanted else []
    if not _needed(sweep_spaces, today):
        return 0
    changed = 0
    with writer_lock:
        while True:
            with transaction.atomic(), connection.cursor() as cursor:
                # BEGIN IMMEDIATE holds the write lock from here: nobody can
                # change a record between reading it and writing its document.
                # On PostgreSQL (several daemons) each batch is one daemon's:
                # rows another daemon is reconciling are skipped, not redone.
                skip = database_engine(connection).skip_locked
                cursor.execute(f"SELECT record_id FROM {tables.QUEUE} ORDER BY record_id LIMIT %s{skip}", [BATCH])
                ids = [row[0] for row in cursor.fetchall()]
                if not ids:
                    break
                changed += _reconcile(cursor, ids, today)
                marks = ",".join(["%s"] * len(ids))
                cursor.execute(f"DELETE FROM {tables.QUEUE} WHERE record_id IN ({marks})", ids)
        for space in sweep_spaces:
            changed += _sweep(space, today)
    return changed


def reconcile_now(record_ids: list[int], today: date | None = None) -> int:
    """Reconcile these records inside the caller's transaction (a write that
    holds the database's write lock already, so nobody can interleave; the
    process lock is not taken, as a reconcile waiting for that write would
    hold it)."""
    today = today or timezone.localdate()
    with transaction.atomic(), connection.cursor() as cursor:
        changed = _reconcile(cursor, list(record_ids), today)
        marks = ",".join(["%s"] * len(record_ids))
        cursor.execute(f"DELETE FROM {tables.QUEUE} WHERE record_id IN ({marks})", list(record_ids))
    return changed


def _reconcile(cursor: CursorWrapper, ids: list[int], today: date) -> int:
    # Hold the rows (PostgreSQL; SQLite's BEGIN IMMEDIATE already holds the
    # database): a reconcile racing an action's own reconcile_now would
    # otherwise read the record as it was before that action and could commit
    # that stale text last. In id order, as every batch takes them.
    records = {r.pk: r for r in Record.objects.select_for_update(of=("self",)).filter(pk__in=ids).order_by("pk")}
    current = set(Record.objects.filter(pk__in=ids).current(today).values_list("pk", flat=True))
    marks = ",".join(["%s"] * len(ids))
    cursor.execute(
        f"SELECT id, space, kind, title, body, tags, checksum, edited, state FROM {tables.DOCS} WHERE id IN ({marks})",
        ids,
    )
    docs = {row[0]: row[1:] for row in cursor.fetchall()}
    changed, states = 0, {}
    newly_edited: list[int] = []  # notify: records this reconcile finds changed outside Vetted
    for pk in ids:
        record, doc = records.get(pk), docs.get(pk)
        wanted = None
        if record is not None and record.current_checksum() == record.approved_checksum:
            wanted = (
                record.space,
                record.kind,
                record.title,
                record.body,
                json.dumps(record.tags),
                record.approved_checksum,
                0,
            )
        elif record is not None and (approved := record.approved_text()) is not None:
            wanted = (
                approved["space"],
                approved["kind"],
                approved["title"],
                approved["body"],
                json.dumps(approved["tags"]),
                record.approved_checksum,
                1,
            )  # edited: the approved copy
        elif record is not None and doc is not None and doc[5] == record.approved_checksum:
            wanted = (*doc[:6], 1)  # edited, no intact copy kept: the approved text last indexed
        if wanted is None:
            if doc is not None:
                cursor.execute(f"DELETE FROM {tables.DOCS} WHERE id = %s", [pk])
                changed += 1
            continue
        state = tables.LIVE if not wanted[6] and pk in current else tables.HELD
        if wanted[6] and (doc is None or not doc[6]):
            newly_edited.append(pk)
        if doc is None:
            cursor.execute(
                f"INSERT INTO {tables.DOCS} (id, space, kind, title, body, tags, checksum, edited, state) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [pk, *wanted, state],
            )
        elif (*wanted, state) != tuple(doc):
            cursor.execute(
                f"UPDATE {tables.DOCS} SET space = %s, kind = %s, title = %s, body = %s, tags = %s, "
                "checksum = %s, edited = %s, state = %s WHERE id = %s",
                [*wanted, state, pk],
            )
        else:
            continue
        changed += 1
        if doc is None or doc[7] != state:
            states[pk] = state
    set_vector_state(cursor, states)
    # Told to the reviewer in this same transaction (the outbox; notify/).
    actions.note_changed_outside(newly_edited)
    return changed


def _sweep(space: str, today: date) -> int:
    """Re-decide the state of every document in ``space`` for ``today``."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT value FROM {tables.META} WHERE key = %s", [f"swept_on:{space}"])
        row = cursor.fetchone()
        if row and row[0] == today.isoformat():
            return 0  # another process swept it meanwhile
        # The domain rule, compiled by Django into a subquery SQLite runs once.
        current_sql, params = Record.objects.current(today).values("pk").query.sql_with_params()
        decided = f"CASE WHEN edited = 0 AND id IN ({current_sql}) THEN '{tables.LIVE}' ELSE '{tables.HELD}' END"
        cursor.execute(
            # <>, not SQLite's IS NOT: neither side is NULL, and PostgreSQL's IS NOT takes only NULL/booleans.
            f"SELECT id, {decided} FROM {tables.DOCS} WHERE space = %s AND state <> {decided}",
            [*params, space, *params],
        )
        states = dict(cursor.fetchall())
        for state in tables.STATES:
            ids = [pk for pk, s in states.items() if s == state]
            for start in range(0, len(ids), BATCH):
                part = ids[start : start + BATCH]
                marks = ",".join(["%s"] * len(part))
                cursor.execute(f"UPDATE {tables.DOCS} SET state = %s WHERE id IN ({marks})", [state, *part])
        set_vector_state(cursor, states)
        cursor.execute(
            f"INSERT INTO {tables.META} (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [f"swept_on:{space}", today.isoformat()],
        )
        return len(states)


def approved_space(record: Record) -> str | None:
    """The space ``record`` was approved in: from its approved version (its
    own while its text matches the checksum, else the kept copy), else its
    document's; None when unknown, which callers treat as "no reader may see
    it"."""
    approved = record.approved_version()
    if approved is not None:
        return str(approved["space"])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT space, checksum FROM {tables.DOCS} WHERE id = %s", [record.pk])
        row = cursor.fetchone()
    if row is not None and row[1] == record.approved_checksum:
        return str(row[0])
    return None


def approved_texts(cursor: CursorWrapper, ids: list[int]) -> dict[int, tuple[str, str, list[str], str, str]]:
    """{id: (title, body, tags, kind, space)} as approved (never the current row)."""
    if not ids:
        return {}
    marks = ",".join(["%s"] * len(ids))
    cursor.execute(f"SELECT id, title, body, tags, kind, space FROM {tables.DOCS} WHERE id IN ({marks})", list(ids))
    return {row[0]: (row[1], row[2], json.loads(row[3]), row[4], row[5]) for row in cursor.fetchall()}
