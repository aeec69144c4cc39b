"""PostgreSQL keyword scores are FTS5's BM25 (issue 17): the same documents
ranked by engines/postgres/keyword.keyword_candidates and by SQLite FTS5's bm25() (the weights
of engines/sqlite/keyword.py) give the same scores. Needs the suite on PostgreSQL
(VETTED_TEST_ENGINE=postgres); FTS5 runs in an in-memory SQLite beside it."""

from __future__ import annotations

import importlib
import sqlite3
from types import SimpleNamespace

import pytest
from django.db import connection

from retrieval import index, tables
from retrieval.embeddings import get_embedder
from retrieval.engines import retrieval_engine
from retrieval.engines.postgres import keyword as pg_fts
from retrieval.engines.postgres import terms as pg_terms
from retrieval.engines.sqlite import keyword as fts

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs the suite on PostgreSQL (VETTED_TEST_ENGINE=postgres)"
)

DOCS = [
    ("Deploy window", "Deploys happen on Tuesdays. Deploys wait for the release train.", ["deploy"]),
    ("Release train", "The release train leaves every second week on Tuesdays after the freeze.", ["release"]),
    ("Build cache", "The build cache lives on the shared runner and is pruned weekly.", ["build", "cache"]),
    ("Runner pool", "Runners are shared between teams; deploys borrow the runner pool at night.", ["runner"]),
]


def _fts5_scores(terms: list[str]) -> dict[str, float]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(title, body, tags, tokenize='porter unicode61 remove_diacritics 2')")
    for title, body, tags in DOCS:
        db.execute("INSERT INTO t VALUES (?, ?, ?)", [title, body, " ".join(tags)])
    query = " OR ".join(f'"{term}"' for term in terms)
    rows = db.execute(f"SELECT title, -bm25(t, {fts._WEIGHTS}) FROM t WHERE t MATCH ?", [query]).fetchall()
    return dict(rows)


@pytest.mark.django_db
def test_postgres_keyword_scores_are_fts5_bm25(make_record):
    for title, body, tags in DOCS:
        make_record(title=title, body=body, tags=tags)
    index.sync(get_embedder())
    terms = ["deploys", "tuesdays", "runner"]
    with connection.cursor() as cursor:
        found = retrieval_engine(cursor).keyword_candidates(cursor, "team", tables.LIVE, terms, 10)
        cursor.execute(f"SELECT id, title FROM {tables.DOCS}")
        titles = dict(cursor.fetchall())
    ours = {titles[rowid]: score for rowid, score in found.items()}
    expected = _fts5_scores(terms)
    assert ours.keys() == expected.keys()
    for title, score in expected.items():
        assert ours[title] == pytest.approx(score, rel=1e-6), title


def _terms_of(cursor, doc_id: int) -> dict[str, int]:
    cursor.execute(f"SELECT lexeme, wf FROM {pg_terms.TERMS} WHERE doc_id = %s", [doc_id])
    return dict(cursor.fetchall())


@pytest.mark.django_db
def test_the_term_rows_follow_every_change_of_a_document(make_record):
    record = make_record(title="Deploy window", body="Deploys happen on Tuesdays.", tags=["deploy"])
    index.sync(get_embedder())
    with connection.cursor() as cursor:
        # title 10 + tags 5 for "deploy", body 1 for "deploys" (the same stem): 16.
        assert _terms_of(cursor, record.pk)["deploy"] == 16
        cursor.execute(f"UPDATE {tables.DOCS} SET body = 'Freezes happen on Fridays.' WHERE id = %s", [record.pk])
        terms = _terms_of(cursor, record.pk)
        assert terms["deploy"] == 15 and "freez" in terms and "tuesday" not in terms
        cursor.execute(f"UPDATE {tables.DOCS} SET state = %s WHERE id = %s", [tables.HELD, record.pk])
        cursor.execute(f"SELECT DISTINCT state FROM {pg_terms.TERMS} WHERE doc_id = %s", [record.pk])
        assert [row[0] for row in cursor.fetchall()] == [tables.HELD]
        assert pg_terms.drift(cursor) == 0
        cursor.execute(f"DELETE FROM {tables.DOCS} WHERE id = %s", [record.pk])
        assert _terms_of(cursor, record.pk) == {}


@pytest.mark.django_db
def test_check_index_reports_term_rows_that_drifted_and_reindex_mends_them(make_record):
    for title, body, tags in DOCS:
        make_record(title=title, body=body, tags=tags)
    index.sync(get_embedder())
    assert index.check().ok
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {pg_terms.TERMS} WHERE lexeme = 'runner'")
    report = index.check()
    assert any("keyword term row(s) do not match" in problem for problem in report.problems), report.problems
    index.reindex(get_embedder())
    assert index.check().ok


@pytest.mark.django_db
def test_a_database_made_before_the_term_table_gets_its_rows_from_the_migration(make_record):
    for title, body, tags in DOCS:
        make_record(title=title, body=body, tags=tags)
    index.sync(get_embedder())
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {pg_terms.TERMS}")  # as before migration 0005
        cursor.execute("DROP FUNCTION retrieval_doc_terms() CASCADE")  # and its triggers
    migration = importlib.import_module("retrieval.migrations.0005_term_frequencies")
    migration.forwards(None, SimpleNamespace(connection=connection))
    with connection.cursor() as cursor:
        assert pg_terms.drift(cursor) == 0
        found = retrieval_engine(cursor).keyword_candidates(cursor, "team", tables.LIVE, ["runner"], 10)
    assert len(found) == 2
    assert index.check().ok


@pytest.mark.django_db
def test_the_one_lexeme_shortcut_ranks_as_the_general_form(make_record):
    for title, body, tags in DOCS:
        make_record(title=title, body=body, tags=tags)
    index.sync(get_embedder())
    terms = ["deploys", "tuesdays", "runner", "train", "deploy"]  # "deploy" and "deploys": one lexeme twice
    with connection.cursor() as cursor:
        idf, mean, _found = pg_fts._statistics(cursor, "team", tables.LIVE, terms)
        shortcut = retrieval_engine(cursor).keyword_candidates(cursor, "team", tables.LIVE, terms, 10)
        general = pg_fts._any_candidates(cursor, ("team", tables.LIVE), terms, idf, mean, 10)
    assert shortcut.keys() == general.keys() and len(shortcut) == 4
    for rowid, score in general.items():
        assert shortcut[rowid] == pytest.approx(score, rel=1e-9)


@pytest.mark.django_db
def test_a_term_of_two_lexemes_matches_only_documents_with_both(make_record):
    both = make_record(title="Style note", body="We don t abbreviate; t is a variable.", tags=[])
    make_record(title="Another note", body="Don is on call this week.", tags=[])
    index.sync(get_embedder())
    with connection.cursor() as cursor:
        found = retrieval_engine(cursor).keyword_candidates(cursor, "team", tables.LIVE, ["don't"], 10)
    assert list(found) == [both.pk]
