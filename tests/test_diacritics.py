"""Keyword search folds diacritics on both engines (issue 17): FTS5's
remove_diacritics 2 on SQLite, engines/postgres/ddl.FOLD on PostgreSQL, both sides of
the match. Runs on whichever engine the suite runs on (VETTED_TEST_ENGINE)."""

from __future__ import annotations

import pytest

from retrieval import index
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from retrieval.search import search


def _found(query: str) -> list[str]:
    index.sync(get_embedder())
    response = search(query, mode="keyword", reader=Reader.for_spaces(["team"]), count_access=False)
    return [hit.record.title for hit in response.results]


@pytest.mark.django_db
def test_an_unaccented_query_finds_accented_text(make_record):
    make_record(title="Café opening hours", body="The café downstairs opens at eight on weekdays and ten on Sundays.")
    assert _found("cafe") == ["Café opening hours"]
    assert _found("CAFÉ hours") == ["Café opening hours"]


@pytest.mark.django_db
def test_an_accented_query_finds_unaccented_text(make_record):
    make_record(title="Resume template", body="The resume template for new hires lives in the shared drive folder.")
    assert _found("résumé") == ["Resume template"]


@pytest.mark.django_db
def test_letters_without_a_decomposition_stay_apart_as_in_fts5(make_record):
    # ø has no canonical decomposition: FTS5 keeps it, and so does the fold.
    make_record(title="Søren onboarding", body="Søren joins the platform team in March and starts on the pager.")
    assert _found("soren") == []
    assert _found("søren") == ["Søren onboarding"]
