"""The body-only vector: one more vector per record, of its first chunk's body
without the title, scored BODY_MARGIN below the title+body chunks (issue 18
§1; retrieval/chunks.py says why)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from retrieval import index, tables
from retrieval.chunks import BODY_MARGIN, BODY_SEQ, chunk_texts, split_body, vector_texts
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from retrieval.search import search

pytestmark = pytest.mark.django_db

WORDS = "deploy pipeline canary rollout artifact registry promote staging rollback revert snapshot restore".split()
# Four sections of some 140 words each: several chunks.
LONG_BODY = "\n\n".join(
    f"## Step {i}\n\n" + " ".join(f"{WORDS[(i + n) % len(WORDS)]} {WORDS[(3 * n) % len(WORDS)]}." for n in range(70))
    for i in range(4)
)
BODY = "Lifeboat drills happen on the first Monday of every month at the north pier."


def sql(query: str, params=()):
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall() if cursor.description else None


def stored(record) -> dict[int, str]:
    return dict(sql(f"SELECT seq, text FROM {tables.CHUNKS} WHERE record_id = %s", [record.pk]))


def check_index() -> str:
    out = io.StringIO()
    call_command("check_index", stdout=out)
    return out.getvalue()


def test_a_record_gets_one_body_only_vector_of_its_first_chunk(make_record):
    runbook = make_record(title="Service runbook", body=LONG_BODY)
    index.sync(get_embedder())

    texts = stored(runbook)
    assert texts[BODY_SEQ] == split_body(runbook.body)[0]
    assert sorted(texts) == [BODY_SEQ, *range(len(split_body(runbook.body)))]
    assert "Index OK." in check_index()


def test_an_empty_body_gets_no_second_vector():
    assert vector_texts("Lifeboat drills", "") == [(0, "Lifeboat drills")]


@pytest.mark.parametrize("cache", [False, True])
def test_the_body_only_vector_scores_its_margin_below_its_cosine(make_record, cache):
    record = make_record(title="Harbour notes", body=BODY, tags=["harbour"])
    embedder = get_embedder()
    index.sync(embedder)
    query = embedder.embed_one(BODY)
    chunk = float(np.dot(embedder.embed(chunk_texts(record.title, record.body, record.tags))[0], query))
    assert chunk < 1.0 - BODY_MARGIN  # so the body-only vector (cosine 1.0) is the better one

    settings.VETTED_VECTOR_CACHE = cache
    try:
        for mode in ("semantic", "hybrid"):
            response = search(BODY, mode=mode, reader=Reader.everything(), embedder=embedder, count_access=False)
            (hit,) = [h for h in response.results if h.record.pk == record.pk]
            if mode == "semantic":
                assert hit.score == pytest.approx(1.0 - BODY_MARGIN, abs=1e-4)
    finally:
        settings.VETTED_VECTOR_CACHE = False


def test_an_index_of_the_previous_version_gets_its_body_vectors_at_the_next_sync(make_record):
    records = [make_record(title=f"Harbour note {i}", body=f"{BODY} Berth {i}.") for i in range(3)]
    index.sync(get_embedder())
    # What a version-2 index looked like: no body-only vectors.
    body_rows = [row[0] for row in sql(f"SELECT id FROM {tables.CHUNKS} WHERE seq = %s", [BODY_SEQ])]
    for chunk_id in body_rows:
        sql(f"DELETE FROM {tables.VEC} WHERE rowid = %s", [chunk_id])
        sql(f"DELETE FROM {tables.CHUNKS} WHERE id = %s", [chunk_id])
    sql(f"UPDATE {tables.META} SET value = '2' WHERE key = 'schema_version'")
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("check_index", stdout=out)
    assert "the vector index is of version 2, this code makes version 3" in out.getvalue()

    stats = index.sync(get_embedder())

    assert (stats.records, stats.embedded, stats.reused) == (3, 3, 3)  # only the new vectors are embedded
    assert all(BODY_SEQ in stored(r) for r in records)
    assert index.read_meta()["schema_version"] == index.SCHEMA_VERSION
    assert "Index OK." in check_index()
    assert index.sync(get_embedder()).records == 0  # and the next sync has nothing to do
