"""PostgreSQL + pgvector (issue 17): VETTED_DATABASE_URL and its checks, and
what only PostgreSQL has to prove (the write log refused to a raw
connection, the HNSW path of vector search).

The URL and message tests run in every pass. The rest need the suite on
PostgreSQL (VETTED_TEST_ENGINE=postgres, which starts a throwaway server);
on SQLite they are skipped, saying so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection
from django.db.utils import ConnectionHandler

from common import env
from dbengine.audit_log import AUDIT_TABLE
from dbengine.postgres import base as pg_backend
from dbengine.postgres import where as pg_where

on_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs the suite on PostgreSQL (VETTED_TEST_ENGINE=postgres)"
)


# --------------------------------------------------------------------------- VETTED_DATABASE_URL


def test_an_unset_url_keeps_sqlite(monkeypatch):
    monkeypatch.delenv("VETTED_DATABASE_URL", raising=False)
    assert env.env_database_url("VETTED_DATABASE_URL") is None


def test_a_postgres_url_becomes_a_database_entry(monkeypatch):
    monkeypatch.setenv("VETTED_DATABASE_URL", "postgresql://vetted:s%40cret@db.example.com:6543/memory?sslmode=require")
    entry = env.env_database_url("VETTED_DATABASE_URL")
    assert entry == {
        "ENGINE": "dbengine.postgres",
        "NAME": "memory",
        "USER": "vetted",
        "PASSWORD": "s@cret",
        "HOST": "db.example.com",
        "PORT": "6543",
        "OPTIONS": {"sslmode": "require"},
    }


def test_a_socket_folder_is_the_host(monkeypatch):
    monkeypatch.setenv("VETTED_DATABASE_URL", "postgresql://postgres:@/postgres?host=/run/postgresql")
    entry = env.env_database_url("VETTED_DATABASE_URL")
    assert entry is not None and entry["HOST"] == "/run/postgresql" and entry["OPTIONS"] == {}


@pytest.mark.parametrize(
    "value, message",
    [
        ("mysql://u:p@h/db", "must start with postgresql://"),
        ("sqlite:///var/x.sqlite3", "unset it to use the SQLite file"),
        ("postgresql://u:p@db.example.com", "names no database"),
        ("postgresql://u:p@db.example.com:notaport/db", "is not a URL"),
        ("postgresql:///db", "names no host"),
    ],
)
def test_a_bad_url_stops_the_process_saying_what_is_wrong(monkeypatch, value, message):
    monkeypatch.setenv("VETTED_DATABASE_URL", value)
    with pytest.raises(ImproperlyConfigured, match=message) as caught:
        env.env_database_url("VETTED_DATABASE_URL")
    assert "VETTED_DATABASE_URL" in str(caught.value)


# --------------------------------------------------------------------------- start-up checks


def test_an_unreachable_server_is_named_with_where_it_was_looked_for(django_db_blocker):
    folder = tempfile.mkdtemp(prefix="vetted-no-server-")
    handler = ConnectionHandler(
        {"default": {"ENGINE": "dbengine.postgres", "NAME": "memory", "HOST": folder, "USER": "u"}}
    )
    with django_db_blocker.unblock(), pytest.raises(DatabaseError) as caught:
        handler["default"].ensure_connection()
    message = str(caught.value)
    assert "Cannot reach PostgreSQL" in message
    assert f"database 'memory' on socket folder {folder}" in message
    assert "VETTED_DATABASE_URL" in message


class _Answers:
    """What a server says to server_problems' two queries (the server is the
    boundary here: a real one cannot be made to lack pgvector)."""

    def __init__(self, version_num: int, extensions: list[tuple[str, str, str | None]]):
        self.answers: list[list] = [[(str(version_num),)], extensions]
        self.rows: list = []

    def execute(self, sql, params=None):
        self.rows = self.answers.pop(0)

    def fetchone(self):
        return self.rows[0]

    def fetchall(self):
        return self.rows


GOOD_EXTENSIONS = [("vector", "0.8.0", None), ("pg_trgm", "1.6", "1.6")]


def test_a_server_with_everything_has_no_problems():
    assert pg_backend.server_problems(_Answers(180003, GOOD_EXTENSIONS)) == []


def test_a_server_without_pgvector_is_told_how_to_install_it():
    (problem,) = pg_backend.server_problems(_Answers(160004, [("pg_trgm", "1.6", None)]))
    assert "'vector' (pgvector) is not installed" in problem
    assert "CREATE EXTENSION vector;" in problem and "postgresql-NN-pgvector" in problem


def test_an_old_server_and_an_old_pgvector_are_both_named():
    problems = pg_backend.server_problems(_Answers(130011, [("vector", "0.4.4", "0.4.4"), ("pg_trgm", "1.6", None)]))
    assert "PostgreSQL 13.11 is too old" in problems[0]
    assert "pgvector 0.4.4 is too old" in problems[1] and "ALTER EXTENSION vector UPDATE;" in problems[1]


def test_a_server_without_pg_trgm_names_the_contrib_package():
    (problem,) = pg_backend.server_problems(_Answers(170000, [("vector", "0.8.0", None)]))
    assert "'pg_trgm' is not available" in problem


@on_postgres
@pytest.mark.django_db
def test_the_test_server_passes_the_checks():
    with connection.cursor() as cursor:
        assert pg_backend.server_problems(cursor) == []
        cursor.execute("SHOW hnsw.ef_search")
        assert cursor.fetchone()[0] == str(pg_backend.EF_SEARCH)


# --------------------------------------------------------------------------- the write log


@on_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "sql",
    [
        f"UPDATE {AUDIT_TABLE} SET snippet = 'rewritten'",
        f"DELETE FROM {AUDIT_TABLE}",
        f"TRUNCATE {AUDIT_TABLE}",
        f"TRUNCATE {AUDIT_TABLE} CASCADE",
    ],
)
def test_a_separate_raw_connection_cannot_rewrite_the_write_log(record, sql):
    import psycopg

    from reviews.models import AuditEvent

    assert AuditEvent.objects.exists()  # proposing and accepting the record wrote some
    before = list(AuditEvent.objects.order_by("id").values_list("id", "snippet"))
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(**params, autocommit=True) as raw:
        with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
            raw.execute(sql)
    assert list(AuditEvent.objects.order_by("id").values_list("id", "snippet")) == before


# --------------------------------------------------------------------------- vectors through HNSW


@on_postgres
@pytest.mark.django_db
def test_hnsw_search_ranks_as_the_exact_in_memory_search(make_record, settings):
    from retrieval.gate import Reader
    from retrieval.search import search

    make_record(title="Billing API repository")
    make_record(title="Deploy window", body="Production deploys happen on weekdays between 9 and 16 UTC.")
    make_record(title="Coffee machine", body="The office coffee machine is descaled every Friday.", space="personal")
    reader = Reader.everything()
    exact = [
        (h.record.pk, round(h.score, 5))
        for h in search("when do deploys happen", mode="semantic", reader=reader).results
    ]
    settings.VETTED_VECTOR_CACHE = False
    through_hnsw = [
        (h.record.pk, round(h.score, 5))
        for h in search("when do deploys happen", mode="semantic", reader=reader).results
    ]
    assert through_hnsw == exact and len(exact) == 3


@on_postgres
@pytest.mark.django_db
def test_a_knn_of_one_space_can_use_that_spaces_hnsw_index(make_record):
    from retrieval import index
    from retrieval.embeddings import get_embedder

    make_record()
    index.sync(get_embedder())
    vector = "[" + ",".join(["0.1"] * get_embedder().dimension) + "]"
    with connection.cursor() as cursor:
        # Three rows would be scanned; forbid that to see the index is there and fits the query.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "EXPLAIN SELECT rowid FROM retrieval_vec WHERE space = 'team' AND held = 0 "
            "ORDER BY embedding <=> %s::vector LIMIT 5",
            [vector],
        )
        plan = " ".join(row[0] for row in cursor.fetchall())
    assert "retrieval_vec_hnsw_team" in plan


# --------------------------------------------------------------------------- backup and restore


def test_the_pg_dump_and_pg_restore_commands_name_the_database_but_never_the_password():
    entry = {"NAME": "memory", "USER": "vetted", "PASSWORD": "hunter2-secret", "HOST": "db.example.com", "PORT": "6543"}
    dump = pg_where.dump_command(entry, "vetted.dump")
    restore = pg_where.restore_command(entry, "vetted.dump")
    assert dump == "pg_dump --format=custom --file=vetted.dump 'postgresql://vetted@db.example.com:6543/memory'"
    assert restore.startswith("pg_restore --clean --if-exists --no-owner --single-transaction ")
    assert "--dbname='postgresql://vetted@db.example.com:6543/memory' vetted.dump" in restore
    assert "hunter2" not in dump + restore
    socket = pg_where.dump_command({"NAME": "postgres", "USER": "postgres", "HOST": "/run/pg"}, "x.dump")
    assert "'postgresql://postgres@/postgres?host=/run/pg'" in socket


@on_postgres
@pytest.mark.django_db
def test_backup_and_restore_refuse_on_postgres_with_the_command_to_use(tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="runs on PostgreSQL") as dumped:
        call_command("backup", str(tmp_path / "copy.dump"))
    assert f"pg_dump --format=custom --file={tmp_path / 'copy.dump'} 'postgresql://" in str(dumped.value)
    with pytest.raises(CommandError, match="Stop every Vetted daemon") as restored:
        call_command("restore", str(tmp_path / "copy.dump"), "--yes")
    assert "pg_restore --clean" in str(restored.value) and str(tmp_path / "copy.dump") in str(restored.value)
    assert not (tmp_path / "copy.dump").exists()


def test_the_serve_lock_of_a_postgres_instance_lives_in_vetted_home(settings, tmp_path):
    """A database name is not a file: PostgreSQL's lock file lives in VETTED_HOME, SQLite's beside
    its file; `serve_lock_path()` asks the engine of the connection in use."""
    from django.db import connections

    from common.files import serve_lock_path
    from dbengine import database_engine
    from dbengine.postgres.engine import PostgresEngine
    from dbengine.sqlite.engine import SQLiteEngine

    entry = {"ENGINE": "dbengine.postgres", "NAME": "vetted"}
    assert PostgresEngine().serve_lock_path(entry, tmp_path) == tmp_path / "postgres-vetted.serve-lock"
    assert SQLiteEngine().serve_lock_path({"NAME": "/data/vetted.sqlite3"}, tmp_path) == Path(
        "/data/vetted.sqlite3.serve-lock"
    )
    settings.VETTED_HOME = tmp_path
    default = connections["default"]
    assert serve_lock_path() == database_engine(default).serve_lock_path(default.settings_dict, tmp_path)


@pytest.mark.slow  # starts a throwaway PostgreSQL server (a process) beside the SQLite run
@pytest.mark.django_db(transaction=True)
def test_bench_search_runs_both_engines_side_by_side_in_one_run():
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command(
        "bench_search",
        "--records",
        "20",
        "--queries",
        "3",
        "--embedders",
        "fake",
        "--engine",
        "sqlite,postgres",
        stdout=out,
    )
    text = out.getvalue()
    for line in ("sqlite         20 fake", "postgres       20 fake"):
        assert line in text
    assert "semantic-hnsw" in text
    assert f"HNSW recall@8 against exact search (hnsw.ef_search = {pg_backend.EF_SEARCH})" in text


# --------------------------------------------------------------------------- spaces (issue 16) on PostgreSQL


def _pg_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename IN ('retrieval_doc', 'retrieval_vec')")
        return {row[0] for row in cursor.fetchall()}


def _space_indexes(slug: str) -> set[str]:
    from retrieval import tables

    key = tables.partition_key(slug)
    keyword = {f"retrieval_doc_{what}_{key}_{state}" for what in ("tsv", "ident") for state in tables.STATES}
    return keyword | {f"retrieval_vec_hnsw_{key}"}


@on_postgres
@pytest.mark.django_db
def test_a_new_space_gets_its_partial_indexes_in_the_transaction_that_made_it(make_record, reviewer):
    from django.db import transaction

    from retrieval import index
    from retrieval.embeddings import get_embedder
    from reviews import actions

    make_record()
    index.sync(get_embedder())  # the vector table exists, so the HNSW index is made too
    assert _space_indexes("team") <= _pg_indexes()

    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        actions.create_space("north-rail", kind="team", name="North Rail", actor=reviewer)
        assert _space_indexes("north-rail") <= _pg_indexes()
        raise Undo
    assert not _space_indexes("north-rail") & _pg_indexes()  # rolled back with the space

    actions.create_space("north-rail", kind="team", name="North Rail", actor=reviewer)
    assert _space_indexes("north-rail") <= _pg_indexes()
    index.reindex(get_embedder())  # drops and makes every space's indexes again
    assert _space_indexes("north-rail") | _space_indexes("team") <= _pg_indexes()


@on_postgres
@pytest.mark.django_db
def test_a_record_of_a_new_space_is_found_through_that_spaces_indexes(reviewer, settings):
    from retrieval import index, tables
    from retrieval.embeddings import get_embedder
    from retrieval.engines.postgres import keyword as pg_fts
    from retrieval.gate import Reader
    from retrieval.search import search
    from reviews import actions
    from tests.conftest import content

    actions.create_space("north-rail", kind="team", name="North Rail", actor=reviewer)
    bot = actions.create_agent("north-bot", spaces=["north-rail"], actor=reviewer)[0]
    proposal = actions.propose_create(
        agent=bot, reason="From the runbook", **content(space="north-rail", title="Wombat deploy window")
    )
    made = actions.accept_proposal(proposal, actor=reviewer).result_record
    index.sync(get_embedder())
    reader = Reader.for_spaces(["north-rail"])
    settings.VETTED_VECTOR_CACHE = False  # semantic search through the HNSW index
    for mode, query in (("keyword", "wombat deploy"), ("keyword", "acme/billing-api"), ("semantic", "wombat")):
        assert [h.record.pk for h in search(query, mode=mode, reader=reader).results] == [made.pk], (mode, query)
    assert search("wombat deploy", mode="keyword", reader=Reader.for_spaces(["team"])).results == []
    key = tables.partition_key("north-rail")
    with connection.cursor() as cursor:
        # With one row the planner prefers any index; leave it only the partial ones
        # (the test's transaction rolls the drop back).
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("DROP INDEX retrieval_doc_partition")
        cursor.execute(
            f"EXPLAIN SELECT id FROM retrieval_doc WHERE {pg_fts.partition('north-rail', tables.LIVE)} "
            "AND tsv @@ plainto_tsquery('vetted_english', 'wombat')"
        )
        plan = " ".join(row[0] for row in cursor.fetchall())
    assert f"retrieval_doc_tsv_{key}_live" in plan
