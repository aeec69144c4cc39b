"""The in-memory vector cache: same answers as vec0, and it follows every change."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from retrieval import index, vectors
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from retrieval.search import search

pytestmark = pytest.mark.django_db

BODIES = [
    "Billing exports run nightly and land in the finance bucket for the accountants.",
    "The checkout web app deploys through the release train on Tuesdays and Thursdays.",
    "Redis for sessions runs as a three node cluster behind the internal load balancer.",
    "Kafka topics for ledger events keep seven days of retention before compaction.",
    "The search indexer rebuilds the catalogue index every night after the price import.",
]


@pytest.fixture
def records(make_record):
    return [make_record(title=f"Operations note {i}", body=body, tags=["ops"]) for i, body in enumerate(BODIES)]


def ids(response):
    return [hit.record.public_id for hit in response.results]


def snapshot(space="team"):
    with connection.cursor() as cursor:
        return vectors.cache.current(cursor, space, get_embedder().dimension)


def test_cache_and_vec0_give_the_same_ranking(records, settings):
    for query in ("nightly billing exports", "deploy checkout release", "session cluster", "retention of events"):
        settings.VETTED_VECTOR_CACHE = True
        cached = search(query, mode="semantic", reader=Reader.everything(), count_access=False)
        settings.VETTED_VECTOR_CACHE = False
        scanned = search(query, mode="semantic", reader=Reader.everything(), count_access=False)
        assert ids(cached) == ids(scanned)
        assert np.allclose([h.score for h in cached.results], [h.score for h in scanned.results], atol=1e-5)


def test_cache_appends_new_records_without_reloading(records, make_record):
    index.sync(get_embedder())
    before = snapshot()
    new = make_record(title="Pager rotation", body="The pager rotation changes every Monday at ten in the morning.")
    index.sync(get_embedder())
    after = snapshot()
    assert after.base == before.base and after.token != before.token  # appended, not reloaded
    assert len(after.chunk_ids) == len(before.chunk_ids) + 2  # its chunk and its body-only vector
    assert new.pk in after.record_ids
    assert ids(search("pager rotation monday", mode="semantic", reader=Reader.everything()))[0] == new.public_id


def test_an_out_of_band_edit_keeps_the_vectors_of_the_approved_text(records):
    index.sync(get_embedder())
    before = snapshot()
    with connection.cursor() as cursor:
        cursor.execute("SELECT text FROM retrieval_chunk WHERE record_id = %s", [records[0].pk])
        approved = cursor.fetchall()
        cursor.execute(
            "UPDATE reviews_record SET body = %s WHERE id = %s",
            ["Completely different text about parking permits and bicycles.", records[0].pk],
        )
    index.sync(get_embedder())
    after = snapshot()
    with connection.cursor() as cursor:
        cursor.execute("SELECT text FROM retrieval_chunk WHERE record_id = %s", [records[0].pk])
        assert cursor.fetchall() == approved  # nothing nobody approved was embedded
    assert (after.base, after.token) == (before.base, before.token)
    assert after.held[list(after.record_ids).index(records[0].pk)]  # but it is withheld now


def test_cache_reloads_when_a_chunk_is_deleted(records):
    index.sync(get_embedder())
    before = snapshot()
    with connection.cursor() as cursor:  # out of band, with the proposal that made it
        cursor.execute("DELETE FROM reviews_proposal WHERE result_record_id = %s", [records[0].pk])
        cursor.execute("DELETE FROM reviews_record WHERE id = %s", [records[0].pk])
    index.sync(get_embedder())
    after = snapshot()
    assert after.base != before.base
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM retrieval_chunk ORDER BY id")
        assert list(after.chunk_ids) == [row[0] for row in cursor.fetchall()]


def test_a_change_in_one_space_leaves_the_other_spaces_cache_alone(records, make_record):
    index.sync(get_embedder())
    team = snapshot("team")
    make_record(space="personal", title="Dentist", body="My dentist appointment is on the first Monday of May.")
    index.sync(get_embedder())
    assert snapshot("team") is team
    assert len(snapshot("personal").chunk_ids) == 2  # its chunk and its body-only vector


def test_cache_follows_a_reindex(records):
    index.sync(get_embedder())
    before = snapshot()
    index.reindex(get_embedder())
    after = snapshot()
    assert after.base != before.base
    assert sorted(set(after.record_ids.tolist())) == sorted(r.pk for r in records)


@pytest.mark.django_db(transaction=True)
def test_a_search_inside_a_rolled_back_transaction_leaves_no_rows_in_the_shared_cache(make_record):
    """A snapshot read inside a transaction that wrote chunks holds that
    transaction's rows; rolled back, SQLite hands their ids to the next rows,
    which an append (ids above the snapshot's highest) never read: the record
    approved next was missing from semantic search until a restart."""
    for i, body in enumerate(BODIES):
        make_record(title=f"Operations note {i}", body=body, tags=["ops"])
    index.sync(get_embedder())
    search("nightly billing exports", mode="semantic", reader=Reader.everything(), count_access=False)

    class Undone(Exception):
        pass

    with pytest.raises(Undone), transaction.atomic():
        make_record(title="Printer floor", body="The printer on the third floor takes badge cards only.")
        index.sync(get_embedder())
        search("printer badge cards", mode="semantic", reader=Reader.everything(), count_access=False)
        raise Undone
    new = make_record(title="Pager rotation", body="The pager rotation changes every Monday at ten in the morning.")
    index.sync(get_embedder())
    found = search("pager rotation monday", mode="semantic", reader=Reader.everything(), count_access=False)
    assert ids(found)[:1] == [new.public_id]
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM retrieval_chunk WHERE space = 'team' ORDER BY id")
        assert list(snapshot().chunk_ids) == [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_committed_changes_are_appended_to_the_shared_snapshot_not_reloaded(make_record, monkeypatch):
    """Outside a transaction of its own (how the daemon searches), a new
    record's chunks are appended to the snapshot every thread shares."""
    for i, body in enumerate(BODIES[:2]):
        make_record(title=f"Operations note {i}", body=body, tags=["ops"])
    index.sync(get_embedder())
    before = snapshot()
    loads = []
    load = vectors.cache._load

    def counted(*args):
        loads.append(args)
        return load(*args)

    monkeypatch.setattr(vectors.cache, "_load", counted)
    new = make_record(title="Pager rotation", body="The pager rotation changes every Monday at ten in the morning.")
    index.sync(get_embedder())
    after = snapshot()
    assert loads == [] and after.base == before.base
    assert new.pk in after.record_ids and snapshot() is after
