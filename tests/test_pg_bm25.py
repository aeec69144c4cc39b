"""PostgreSQL keyword scores are FTS5's BM25 (issue 17): the same documents
ranked by pg_fts.keyword_candidates and by SQLite FTS5's bm25() (the weights
of fts.py) give the same scores. Needs the suite on PostgreSQL
(VETTED_TEST_ENGINE=postgres); FTS5 runs in an in-memory SQLite beside it."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection

from retrieval import fts, index, schema
from retrieval.embeddings import get_embedder

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
        found = fts.keyword_candidates(cursor, "team", schema.LIVE, terms, 10)
        cursor.execute(f"SELECT id, title FROM {schema.DOCS}")
        titles = dict(cursor.fetchall())
    ours = {titles[rowid]: score for rowid, score in found.items()}
    expected = _fts5_scores(terms)
    assert ours.keys() == expected.keys()
    for title, score in expected.items():
        assert ours[title] == pytest.approx(score, rel=1e-6), title
