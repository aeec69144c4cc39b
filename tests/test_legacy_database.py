"""The rename of the old name, scope, to space (reviews 0011, notify 0003, retrieval 0006)
on a database as the version before it left one, on the engine under test
(``VETTED_TEST_ENGINE=postgres`` runs it on PostgreSQL).

The old database is made here, not kept as a file: records are approved and
indexed (text, chunks, vectors), the database is migrated back to the
migrations before the rename (so every table, the vec0 table included, has
the old column names, as asserted), rows are written the old way (a record
whose kept approved content says ``scope``, an agent's ``scopes``, a move
event with ``from_scope``/``to_scope``), and it is migrated forward again.
Then every record is found in every search mode, no vector was computed
again, and the old rows read under the new names."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from retrieval import index, tables
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from retrieval.search import search
from reviews import legacy_events
from reviews.checksum import content_checksum
from reviews.models import Agent, AuditEvent, Record

BEFORE = [
    ("reviews", "0010_invitation_revoked"),
    ("retrieval", "0005_term_frequencies"),
    ("notify", "0002_outbox_space_slug"),
]
AFTER = [("reviews", "0011_space_names"), ("retrieval", "0006_space_columns"), ("notify", "0003_outbox_space")]

# It migrates the worker's test database back and forth: in a shared -n 2 run,
# transactional tests that followed it on the same worker failed (their
# flush found the database not as they expect); alone (serial) it passes.
# postgres_slow: the rename's SQL differs by engine, so the PostgreSQL pass runs it too.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.postgres_slow,
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def columns(table: str) -> set[str]:
    with connection.cursor() as cursor:
        return {c.name for c in connection.introspection.get_table_description(cursor, table)}


def vector_columns() -> str:
    """What the vector table's space column is called."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            return "scope" if "scope" in columns(tables.VEC) else "space"
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [tables.VEC])
        sql = cursor.fetchone()[0]
    return "scope" if "scope text partition key" in sql else "space"


def stored_vectors(record_ids: list[int]) -> dict[int, bytes]:
    """Each chunk's id and stored vector copy, for these records, with the
    vector table's own row for it (a chunk embedded again gets a new id)."""
    marks = ", ".join(["%s"] * len(record_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, c.embedding FROM {tables.CHUNKS} c JOIN {tables.VEC} v ON v.rowid = c.id "
            f"WHERE c.record_id IN ({marks}) ORDER BY c.id",
            record_ids,
        )
        return {int(row[0]): bytes(row[1]) for row in cursor.fetchall()}


def test_a_database_of_the_version_before_migrates_and_is_searched(make_record, reviewer, agent):
    made = [
        make_record(title="Billing deploy window", body="The billing API deploys every Tuesday at 10:00 UTC."),
        make_record(title="Parking at the office", body="Visitors park on level minus two, bay 14 to 20."),
        make_record(space="personal", title="Rita's editor", body="Rita writes in Helix with the default keymap."),
    ]
    index.sync(get_embedder())
    vectors_before = stored_vectors([m.pk for m in made])
    assert len(vectors_before) >= 3

    old = migrate(BEFORE)
    try:
        _old_rows_then_forward(old, made, reviewer, agent, vectors_before)
    finally:
        migrate(AFTER)  # whatever happened, the database is left as the other tests expect it


def _old_rows_then_forward(old, made, reviewer, agent, vectors_before):
    # The layout of the version before: every table says scope.
    assert "scope" in columns("reviews_record") and "space" not in columns("reviews_record")
    assert "scopes" in columns("reviews_agent") and "scope" in columns("notify_outboxevent")
    assert "scope" in columns(tables.DOCS) and "scope" in columns(tables.CHUNKS)
    assert vector_columns() == "scope"

    # Rows written the old way.
    OldRecord, OldAgent, OldEvent = (old.get_model("reviews", name) for name in ("Record", "Agent", "AuditEvent"))
    written = OldRecord.objects.get(pk=made[0].pk)
    assert written.approved_content["scope"] == "team"  # migrated back with the rest
    text = {"kind": "fact", "scope": "team", "title": "Wiki moved to the new host", "tags": ["wiki"]}
    text["body"] = "The team wiki moved to wiki.internal.example on Monday; the old host redirects."
    checksum = content_checksum(**{("space" if k == "scope" else k): v for k, v in text.items()})
    legacy = OldRecord.objects.create(
        public_id="rec_0ldf0rmat001",
        **text,
        status="approved",
        review_by="2030-01-01",
        approved_checksum=checksum,
        approved_content=dict(text),
        approved_by_id=reviewer.pk,
        approved_at=timezone.now(),
    )
    OldAgent.objects.filter(pk=agent.pk).update(scopes=["team"])
    OldEvent.objects.create(
        event_type="record.moved",
        actor_type="user",
        actor="rita",
        subject_type="record",
        subject_id=legacy.public_id,
        record_ref=legacy.public_id,
        extra={"from_scope": "personal", "to_scope": "team"},
    )

    migrate(AFTER)
    assert "space" in columns("reviews_record") and "scope" not in columns("reviews_record")
    assert "spaces" in columns("reviews_agent") and "space" in columns("notify_outboxevent")
    assert "space" in columns(tables.DOCS) and "scope" not in columns(tables.CHUNKS)
    assert vector_columns() == "space"

    moved_in = Record.objects.get(public_id=legacy.public_id)
    assert moved_in.space == "team" and moved_in.approved_content["space"] == "team"
    assert Record.objects.get(pk=made[0].pk).approved_content == {
        "kind": "fact",
        "space": "team",
        "title": "Billing deploy window",
        "body": "The billing API deploys every Tuesday at 10:00 UTC.",
        "tags": made[0].tags,
    }
    assert Agent.objects.get(pk=agent.pk).spaces == ["team"]
    event = AuditEvent.objects.get(record_ref=legacy.public_id)
    assert legacy_events.value(event.extra, "to_space") == "team"  # append-only: its keys stay

    team = Reader.for_spaces(["team"])
    for mode in ("keyword", "semantic", "hybrid"):
        found = search("billing deploys Tuesday", mode=mode, reader=team, count_access=False)
        assert [r.record.public_id for r in found.results][:1] == [made[0].public_id], mode
        parking = search("visitors park level", mode=mode, reader=team, count_access=False)
        assert made[1].public_id in [r.record.public_id for r in parking.results], mode
        personal = search("Helix keymap editor", mode=mode, reader=team, count_access=False)
        assert made[2].public_id not in [r.record.public_id for r in personal.results], mode
    # The records indexed before kept their chunks and vectors (remade from
    # the stored copies): none was computed again.
    assert stored_vectors([m.pk for m in made]) == vectors_before
    wiki = search("wiki moved host", mode="keyword", reader=team, count_access=False)
    assert legacy.public_id in [r.record.public_id for r in wiki.results]
