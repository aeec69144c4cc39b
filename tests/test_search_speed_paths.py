"""The faster paths of a search return what the plain ones did: the keyword
pool drawn without a word in half the partition's documents, and the gate's
rows read by one raw SELECT."""

from __future__ import annotations

import pytest
from django.db import connection

from retrieval import candidates, tables
from retrieval import search as search_module
from retrieval.delivery import rows_by_id
from retrieval.engines import retrieval_engine
from retrieval.gate import Reader
from retrieval.scoring import DocFreq
from retrieval.search import search
from reviews.models import Record
from tests.shared_search_data import OverSharedData, fresh, shared_data

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def isolated_process_state(monkeypatch):
    monkeypatch.setattr(search_module, "access_counter", search_module._AccessCounter(flush_every=3600))
    monkeypatch.setattr(search_module, "_docfreq", search_module._DocFreq())


def _pool_terms(monkeypatch) -> list[list[str]]:
    """The terms each keyword_candidates call was given, recorded."""
    seen: list[list[str]] = []
    engine_class = type(retrieval_engine(connection.cursor()))
    original = engine_class.keyword_candidates

    def recording(self, cursor, space, state, terms, k):
        seen.append(list(terms))
        return original(self, cursor, space, state, terms, k)

    monkeypatch.setattr(engine_class, "keyword_candidates", recording)
    return seen


def _common_word_records(cast):
    """Eight records in the team space, every one of them with "rotation",
    each rarer word in fewer than half of them."""
    rare = ["ledger", "invoice", "kafka", "ledger kafka", "grafana", "invoice", "kafka", "helm"]
    return [
        cast.make_record(
            title=f"Rotation note {n}",
            body=f"The rotation of the {words} service happens weekly; note {n}.",
            space="team",
        )
        for n, words in enumerate(rare)
    ]


@pytest.mark.xdist_group("search_speed_paths.TestOverEightRecords")
class TestOverEightRecords(OverSharedData):
    """The pruned and the plain paths over the same eight records, made once
    for the class (they were 0.6 s of each of the 13 tests' setup)."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _common_word_records) as cast:
            yield cast

    @pytest.fixture
    def common_word_records(self, shared):
        return fresh(shared.data)

    def test_a_word_in_half_the_documents_is_left_out_of_the_pool_query(self, common_word_records, monkeypatch):
        seen = _pool_terms(monkeypatch)
        with connection.cursor() as cursor:
            pool = candidates._keyword_pool(
                cursor, "team", tables.LIVE, ["rotation", "ledger"], 2, DocFreq(), rescored=True
            )
        assert seen == [["ledger"]]  # "rotation" is in every document: BM25's floor idf
        assert len(pool) == 2

    def test_the_full_query_runs_when_the_telling_words_find_fewer_than_k(self, common_word_records, monkeypatch):
        seen = _pool_terms(monkeypatch)
        with connection.cursor() as cursor:
            pool = candidates._keyword_pool(
                cursor, "team", tables.LIVE, ["rotation", "grafana"], 4, DocFreq(), rescored=True
            )
        assert seen == [["grafana"], ["rotation", "grafana"]]
        assert len(pool) == 4  # the grafana record and three that hold only "rotation"

    def test_without_rescoring_every_word_is_in_the_pool_query(self, common_word_records, monkeypatch):
        seen = _pool_terms(monkeypatch)
        with connection.cursor() as cursor:
            candidates._keyword_pool(cursor, "team", tables.LIVE, ["rotation", "ledger"], 2, DocFreq(), rescored=False)
        assert seen == [["rotation", "ledger"]]  # keyword mode in one space keeps FTS5's own scores

    @pytest.mark.parametrize("mode", ["hybrid", "keyword"])
    @pytest.mark.parametrize("query", ["rotation ledger", "rotation invoice kafka", "rotation grafana", "rotation"])
    def test_a_pruned_pool_gives_the_same_results_and_scores(self, common_word_records, monkeypatch, mode, query):
        # Pools of 2 (a search asks for 64), so that the pruned query decides the pool here.
        pruned_pool, pool_calls = candidates._keyword_pool, []

        def small_pruned(cursor, space, state, terms, k, docfreq, *, rescored):
            pool_calls.append(terms)
            return pruned_pool(cursor, space, state, terms, 2, docfreq, rescored=rescored)

        def small_full(cursor, space, state, terms, k, docfreq, *, rescored):
            return retrieval_engine(cursor).keyword_candidates(cursor, space, state, terms, 2)

        reader = Reader.for_spaces(["team"])
        monkeypatch.setattr(candidates, "_keyword_pool", small_pruned)
        pruned = search(query, mode=mode, reader=reader, limit=3, count_access=False)
        monkeypatch.setattr(candidates, "_keyword_pool", small_full)
        monkeypatch.setattr(search_module, "_docfreq", search_module._DocFreq())
        plain = search(query, mode=mode, reader=reader, limit=3, count_access=False)
        assert pool_calls
        assert [(h.record.pk, round(h.score, 6)) for h in pruned.results] == [
            (h.record.pk, round(h.score, 6)) for h in plain.results
        ]
        assert pruned.results  # the comparison compared something

    def test_rows_by_id_reads_the_same_records_as_the_orm(self, common_word_records):
        ids = [r.pk for r in common_word_records[:4]] + [10**9]  # an unknown id is simply absent
        raw = rows_by_id(ids)
        orm = Record.objects.in_bulk(ids)
        assert sorted(raw) == sorted(orm) == sorted(ids[:4])
        fields = [f.attname for f in Record._meta.concrete_fields]
        for pk, record in raw.items():
            assert [getattr(record, f) for f in fields] == [getattr(orm[pk], f) for f in fields]
            assert record.withhold_reason() == orm[pk].withhold_reason() is None
        assert rows_by_id([]) == {}

    def test_rows_by_id_with_the_proposer_loads_it_in_the_same_query(
        self, common_word_records, django_assert_num_queries
    ):
        ids = [r.pk for r in common_word_records]
        with django_assert_num_queries(1):
            rows = rows_by_id(ids, with_proposer=True)
            names = {record.proposed_by.name for record in rows.values()}
        assert len(names) == 1
