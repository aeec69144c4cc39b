"""The indexes follow the approved content of the records: reconcile files
each record's approved text by space and state, triggers keep both keyword
indexes in step, the vector queue is drained by index.sync (re-embedding only
changed chunks); chunk splitting, model-change detection, and check_index
finding every kind of drift.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from datetime import timedelta
from itertools import pairwise

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from retrieval import approved_content, index, tables
from retrieval import search as search_module
from retrieval.embeddings import Embedder, FakeEmbedder, get_embedder, set_embedder
from retrieval.engines.sqlite.ddl import KEYWORD_TABLES
from retrieval.gate import Reader
from retrieval.index import CHUNK_CHARS, IndexModelMismatch, split_body
from retrieval.search import search
from reviews import actions
from reviews.checksum import content_checksum
from reviews.models import Record


@pytest.fixture(autouse=True)
def isolated_process_state(monkeypatch):
    """Private access counter and idf cache per test; the process embedder is
    put back whatever a test does with it."""
    monkeypatch.setattr(search_module, "access_counter", search_module._AccessCounter(flush_every=3600))
    monkeypatch.setattr(search_module, "_docfreq", search_module._DocFreq())
    original = get_embedder()
    yield
    set_embedder(original)


# --------------------------------------------------------------------------- helpers


def sql(query: str, params=()):
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        # psycopg refuses fetchall() after a statement that returns no rows.
        return cursor.fetchall() if cursor.description is not None else []


POSTGRES = connection.vendor == "postgresql"


def fts_rowids(table: str, text: str) -> set[int]:
    """Documents whose keyword index ``table`` (tables.fts / tables.ident
    names, which stand for the same partitions on PostgreSQL) holds ``text``."""
    if POSTGRES:
        from retrieval.engines.postgres import ddl as pg_schema
        from retrieval.engines.postgres import keyword as pg_fts

        what, space, state = table.removeprefix("retrieval_").split("_")
        where = pg_fts.partition(space, state)
        if what == "fts":
            query = f"tsv @@ phraseto_tsquery('{pg_schema.CONFIG}', %s)"
            return {row[0] for row in sql(f"SELECT id FROM {tables.DOCS} WHERE {where} AND {query}", [text])}
        pattern = f"%{text.lower()}%"
        query = f"{pg_schema.IDENT_TEXT} LIKE %s"
        return {row[0] for row in sql(f"SELECT id FROM {tables.DOCS} WHERE {where} AND {query}", [pattern])}
    phrase = '"' + text.replace('"', '""') + '"'
    return {row[0] for row in sql(f"SELECT rowid FROM {table} WHERE {table} MATCH %s", [phrase])}


def drop_trigger(name: str) -> None:
    table = tables.DOCS if name.startswith("retrieval_doc") else tables.RECORD_TABLE
    sql(f"DROP TRIGGER {name} ON {table}" if POSTGRES else f"DROP TRIGGER {name}")


def create_trigger(name: str) -> None:
    from retrieval.engines import retrieval_engine

    with connection.cursor() as cursor:
        cursor.execute(retrieval_engine(cursor).index_triggers()[name])


def trigger_exists(name: str) -> bool:
    from dbengine import database_engine

    with connection.cursor() as cursor:
        return name in database_engine(cursor).trigger_names(cursor)


def in_both_keyword_indexes(text: str, space: str = "team", state: str = tables.LIVE) -> tuple[set[int], set[int]]:
    approved_content.reconcile()
    return fts_rowids(tables.fts(space, state), text), fts_rowids(tables.ident(space, state), text)


def anywhere(text: str) -> set[int]:
    """Every document of every partition whose keyword indexes hold ``text``."""
    approved_content.reconcile()
    return {rowid for table in KEYWORD_TABLES for rowid in fts_rowids(table, text)}


def approve_in_place(record: Record, **fields) -> None:
    """Change a record's text *and* its approval checksum out of band, as if
    the new text had been approved (the only way approved text changes)."""
    record.refresh_from_db()
    data = {
        "kind": record.kind,
        "space": record.space,
        "title": record.title,
        "body": record.body,
        "tags": record.tags,
        **fields,
    }
    sql(
        "UPDATE reviews_record SET title = %s, body = %s, tags = %s, approved_checksum = %s WHERE id = %s",
        [data["title"], data["body"], json.dumps(data["tags"]), content_checksum(**data), record.pk],
    )


def run(command: str, *args) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def check_fails(*args) -> str:
    """Run check_index expecting failure; return what it printed."""
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"index problem\(s\)"):
        call_command("check_index", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def keyword(query: str):
    return search(query, mode="keyword", reader=Reader.everything(), count_access=False)


def chunk_rows(record: Record) -> list[tuple[int, int, str]]:
    return sql(f"SELECT seq, id, text_hash FROM {tables.CHUNKS} WHERE record_id = %s ORDER BY seq", [record.pk])


def queue(record: Record) -> None:
    """Put a record in the vector queue without changing it."""
    sql(
        f"INSERT INTO {tables.DIRTY} (record_id) VALUES (%s) "
        "ON CONFLICT (record_id) DO UPDATE SET gen = retrieval_dirty.gen + 1",
        [record.pk],
    )


SECTION_WORDS = {
    "Deploy": "deploy pipeline canary rollout artifact registry promote staging",
    "Rollback": "rollback revert snapshot database restore previous release",
    "Monitoring": "monitoring dashboard latency alert pager threshold graph",
    "Contacts": "contacts owner escalation rota phone channel manager",
}


def section(name: str, words: str, sentences: int = 9) -> str:
    vocab = words.split()
    lines = [
        f"Step {n} of the {name.lower()} runbook covers {vocab[n % len(vocab)]} and "
        f"{vocab[(n + 3) % len(vocab)]} for the service."
        for n in range(sentences)
    ]
    return f"## {name}\n\n" + " ".join(lines)


def long_body(**overrides: str) -> str:
    parts = []
    for name, words in SECTION_WORDS.items():
        parts.append(overrides.get(name) or section(name, words))
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- keyword indexes


@pytest.mark.django_db
def test_an_accepted_record_enters_both_keyword_indexes_of_its_space(make_record):
    record = make_record(
        title="Zeppelin hangar codes",
        tags=["hangar"],
        body="The zeppelin hangar door code is rotated by ticket ZX-9000 every quarter.",
    )

    assert in_both_keyword_indexes("zeppelin") == ({record.pk}, {record.pk})
    assert fts_rowids(tables.ident("team", tables.LIVE), "ZX-9000") == {record.pk}
    assert anywhere("zeppelin") == {record.pk}  # in no other space's tables
    assert [hit.record for hit in keyword("zeppelin hangar").results] == [record]
    assert [hit.record for hit in keyword("ZX-9000").results] == [record]
    assert "Index OK." in run("check_index", "--sync")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "column, new_value, old_word, new_word",
    [
        ("title", "Dirigible hangar codes", "keypad", "dirigible"),
        ("body", "The blimp hangar door code is rotated by ticket QW-4242 every month.", "quarter", "blimp"),
        ("tags", json.dumps(["hangar", "airship"]), "security", "airship"),
    ],
)
def test_an_out_of_band_update_is_never_indexed_and_keeps_the_approved_text_withheld(
    make_record, column, new_value, old_word, new_word
):
    record = make_record(
        title="Zeppelin hangar keypad",
        tags=["hangar", "security"],
        body="The zeppelin hangar door code is rotated by ticket ZX-9000 every quarter.",
    )
    other = make_record(
        title="Quarterly zeppelin security review",
        tags=["review"],
        body="Each quarter the security team reviews the zeppelin hangar.",
    )
    run("check_index", "--sync")
    assert record.pk in fts_rowids(tables.fts("team", tables.LIVE), old_word)

    sql(f"UPDATE reviews_record SET {column} = %s WHERE id = %s", [new_value, record.pk])

    # The approved text moves to the withheld partition; the new text is nowhere.
    assert record.pk not in in_both_keyword_indexes(old_word)[0]
    assert record.pk in in_both_keyword_indexes(old_word, state=tables.HELD)[0]
    assert record.pk not in anywhere(new_word)
    assert in_both_keyword_indexes("quarterly") == ({other.pk}, {other.pk})
    # Searching the text nobody approved finds nothing and counts nothing ...
    found = keyword(new_word)
    assert found.results == [] and found.withheld == {}
    # ... its approved text is what counts as withheld.
    assert keyword(old_word).withheld == {"edited": 1}
    assert "Index OK." in run("check_index", "--sync")


@pytest.mark.django_db
def test_an_out_of_band_identifier_update_is_not_searchable_by_the_new_identifier(make_record):
    record = make_record(
        title="Zeppelin hangar codes",
        tags=["hangar"],
        body="The zeppelin hangar door code is rotated by ticket ZX-9000 every quarter.",
    )

    sql(
        "UPDATE reviews_record SET body = %s WHERE id = %s",
        ["The zeppelin hangar door code is rotated by ticket QW-4242 every quarter.", record.pk],
    )

    assert anywhere("QW-4242") == set()
    assert fts_rowids(tables.ident("team", tables.HELD), "ZX-9000") == {record.pk}
    assert keyword("QW-4242").withheld == {}
    assert keyword("ZX-9000").withheld == {"edited": 1}


@pytest.mark.django_db
def test_a_record_edited_before_it_was_ever_indexed_is_not_indexed_at_all(reviewer):
    data = {
        "kind": "fact",
        "space": "team",
        "title": "Hovercraft berth",
        "tags": ["harbour"],
        "body": "The hovercraft berth is at pier nine next to the lifeboat station.",
    }
    Record.objects.bulk_create(
        [
            Record(  # bulk_create: no signal, so nothing reconciles it yet
                **{**data, "body": "The hovercraft berth moved to pier twelve behind the ferry office."},
                approved_checksum=content_checksum(**data),
                approved_at=timezone.now(),
                approved_by=reviewer,
                review_by=timezone.localdate() + timedelta(days=90),
            )
        ]
    )

    assert anywhere("hovercraft") == set()
    assert keyword("hovercraft").withheld == {} and keyword("twelve").withheld == {}


@pytest.mark.django_db
def test_a_record_edited_before_it_was_indexed_is_indexed_by_its_kept_approved_copy(reviewer):
    data = {
        "kind": "fact",
        "space": "team",
        "title": "Hovercraft berth",
        "tags": ["harbour"],
        "body": "The hovercraft berth is at pier nine next to the lifeboat station.",
    }
    Record.objects.bulk_create(
        [
            Record(
                **{**data, "body": "The hovercraft berth moved to pier twelve behind the ferry office."},
                approved_checksum=content_checksum(**data),
                approved_content=data,
                approved_at=timezone.now(),
                approved_by=reviewer,
                review_by=timezone.localdate() + timedelta(days=90),
            )
        ]
    )

    assert in_both_keyword_indexes("lifeboat", state=tables.HELD)[0] != set()
    assert anywhere("twelve") == set()
    assert keyword("lifeboat station").withheld == {"edited": 1} and keyword("twelve").withheld == {}


@pytest.mark.django_db
def test_state_changes_move_a_document_between_partitions(record, agent, reviewer):
    assert in_both_keyword_indexes("billing")[0] == {record.pk}

    actions.dispute_record(record, agent=agent, reason="The repository moved")
    assert in_both_keyword_indexes("billing", state=tables.HELD)[0] == {record.pk}
    actions.clear_dispute(record, actor=reviewer)
    assert in_both_keyword_indexes("billing")[0] == {record.pk}
    Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=1))
    assert in_both_keyword_indexes("billing", state=tables.HELD)[0] == {record.pk}


@pytest.mark.django_db
def test_a_space_is_swept_for_date_changes_once_a_day(record):
    approved_content.reconcile()
    sql(f"UPDATE {tables.META} SET value = '2000-01-01' WHERE key LIKE 'swept_on:%%'")
    # A date change without any write: the record became overdue "at midnight".
    sql(f"DELETE FROM {tables.QUEUE}")
    drop_trigger("retrieval_record_au")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE reviews_record SET review_by = %s WHERE id = %s",
            [timezone.localdate() - timedelta(days=1), record.pk],
        )
    create_trigger("retrieval_record_au")

    response = keyword("billing")

    assert response.results == [] and response.withheld == {"overdue": 1}
    assert sql(f"SELECT state FROM {tables.DOCS} WHERE id = %s", [record.pk]) == [(tables.HELD,)]


def _bare_record(reviewer, **fields) -> Record:
    data = {
        "kind": "fact",
        "space": "team",
        "title": "Hovercraft berth",
        "tags": ["harbour"],
        "body": "The hovercraft berth is at pier nine next to the lifeboat station.",
    }
    data.update(fields)
    now = timezone.now()
    return Record.objects.create(
        **data,
        approved_checksum=content_checksum(**data),
        approved_at=now,
        approved_by=reviewer,
        review_by=timezone.localdate() + timedelta(days=90),
    )


@pytest.mark.django_db
def test_a_deleted_record_leaves_both_keyword_indexes_and_the_vectors(reviewer, make_record):
    keep = make_record(
        title="Lifeboat drills", tags=["harbour"], body="Lifeboat drills happen on the first Monday of every month."
    )
    gone = _bare_record(reviewer)
    assert [hit.record for hit in keyword("hovercraft").results] == [gone]
    stats = index.sync(get_embedder())
    assert stats.records == 2 and [row[0] for row in chunk_rows(gone)] == [index.BODY_SEQ, 0]

    sql("DELETE FROM reviews_record WHERE id = %s", [gone.pk])

    assert anywhere("hovercraft") == set()
    assert keyword("hovercraft").results == [] and keyword("hovercraft").withheld == {}
    assert index.pending_count() == 1
    stats = index.sync(get_embedder())
    assert stats.removed == 2  # its chunk and its body-only vector
    assert chunk_rows(gone) == []
    assert sql(f"SELECT count(*) FROM {tables.VEC}") == [(2,)]
    assert "Index OK." in run("check_index", "--sync")
    assert [hit.record for hit in keyword("lifeboat").results] == [keep]


@pytest.mark.django_db
def test_status_and_counter_changes_queue_no_vector_work(record, agent, reviewer):
    index.sync(get_embedder())
    assert index.pending_count() == 0

    actions.dispute_record(record, agent=agent, reason="The repository moved")
    actions.clear_dispute(record, actor=reviewer)
    actions.verify_record(record, actor=reviewer)
    Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=1))
    sql("UPDATE reviews_record SET title = title, body = body WHERE id = %s", [record.pk])
    approved_content.reconcile()

    assert index.pending_count() == 0


@pytest.mark.django_db
def test_an_out_of_band_text_change_embeds_nothing(record):
    index.sync(get_embedder())

    sql("UPDATE reviews_record SET body = body || ' Also on Saturdays.' WHERE id = %s", [record.pk])

    assert sql(f"SELECT count(*) FROM {tables.QUEUE}") == [(1,)]  # to be reconciled ...
    stats = index.sync(get_embedder())
    assert stats.records == 0 and index.pending_count() == 0  # ... but its approved text did not change


@pytest.mark.django_db
def test_a_change_of_the_approved_text_queues_the_record_again(record):
    index.sync(get_embedder())

    approve_in_place(record, body=record.body + " Also on Saturdays.")
    approved_content.reconcile()

    assert index.pending_count() == 1


# --------------------------------------------------------------------------- incremental sync


@pytest.mark.django_db
def test_resyncing_an_unchanged_record_embeds_nothing(make_record):
    record = make_record(title="Service runbook", tags=["runbook"], body=long_body())
    first = index.sync(get_embedder())
    chunks = chunk_rows(record)
    assert first.embedded == len(chunks) >= 4

    queue(record)
    again = index.sync(get_embedder())

    assert again.records == 1
    assert again.embedded == 0
    assert again.reused == len(chunks)
    assert chunk_rows(record) == chunks
    assert index.pending_count() == 0


@pytest.mark.django_db
def test_an_empty_queue_syncs_nothing(record):
    index.sync(get_embedder())

    stats = index.sync(get_embedder())

    assert (stats.records, stats.embedded, stats.reused, stats.removed) == (0, 0, 0, 0)


class CountingEmbedder(FakeEmbedder):
    def __init__(self):
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


@pytest.mark.django_db
def test_changing_one_section_reembeds_only_that_chunk(make_record):
    record = make_record(title="Service runbook", tags=["runbook"], body=long_body())
    embedder = CountingEmbedder()
    index.sync(embedder)
    before = chunk_rows(record)
    rollback = [
        n
        for n, (_seq, _id, _hash) in enumerate(before)
        if "rollback" in sql(f"SELECT text FROM {tables.CHUNKS} WHERE id = %s", [_id])[0][0].lower()
    ]
    assert len(rollback) == 1

    changed = section("Rollback", SECTION_WORDS["Rollback"]).replace("Step 4", "Stage 4")
    approve_in_place(record, body=long_body(Rollback=changed))
    embedder.texts.clear()
    stats = index.sync(embedder)

    after = chunk_rows(record)
    assert stats.embedded == 1
    assert stats.reused == len(before) - 1
    assert len(embedder.texts) == 1 and "Stage 4" in embedder.texts[0]
    assert len(after) == len(before)
    for seq, (old, new) in enumerate(zip(before, after, strict=True)):
        if seq in rollback:
            assert new[1] != old[1] and new[2] != old[2]
        else:
            assert new == old
    assert "Index OK." in run("check_index", "--sync")


@pytest.mark.django_db
def test_a_shorter_body_removes_the_extra_chunks(make_record):
    record = make_record(title="Service runbook", tags=["runbook"], body=long_body())
    index.sync(get_embedder())
    count = len(chunk_rows(record))

    approve_in_place(record, body=section("Deploy", SECTION_WORDS["Deploy"]))
    stats = index.sync(get_embedder())

    # The first chunk is unchanged and stays; the body-only vector is of the
    # first chunk's body, also unchanged: both reused, the other chunks gone.
    assert [row[0] for row in chunk_rows(record)] == [index.BODY_SEQ, 0]
    assert stats.removed == count - 2
    assert stats.embedded == 0 and stats.reused == 2
    assert "Index OK." in run("check_index")


@pytest.mark.django_db
def test_a_title_change_reembeds_every_chunk_but_not_the_body_only_vector(make_record):
    record = make_record(title="Service runbook", tags=["runbook"], body=long_body())
    index.sync(get_embedder())
    count = len(chunk_rows(record))

    approve_in_place(record, title="Payments service runbook")
    stats = index.sync(get_embedder())

    assert stats.embedded == count - 1 and stats.reused == 1


@pytest.mark.django_db
def test_a_section_inserted_above_reuses_the_shifted_chunks_vectors(make_record):
    record = make_record(title="Service runbook", tags=["runbook"], body=long_body())
    embedder = CountingEmbedder()
    index.sync(embedder)
    before = chunk_rows(record)

    approve_in_place(record, body=section("Intro", SECTION_WORDS["Deploy"]) + "\n\n" + long_body())
    embedder.texts.clear()
    stats = index.sync(embedder)

    # Every chunk moves one seq down. Embedded again: the new first chunk, the
    # old first one (it loses the tags), the body-only text; the rest are copied.
    assert len(chunk_rows(record)) == len(before) + 1
    assert stats.embedded == len(embedder.texts) == 3
    assert stats.reused == len(before) - 2
    assert "Index OK." in run("check_index")


# --------------------------------------------------------------------------- split_body


def words(text: str) -> Counter:
    return Counter(re.findall(r"\w+", text))


def test_headings_start_chunks_and_keep_their_text():
    body = "Intro line about the service.\n\n## Deploy\n\nDeploy on Tuesdays.\n\n## Rollback\n\nRevert the release."

    chunks = split_body(body)

    assert chunks == [
        "Intro line about the service.",
        "## Deploy\n\nDeploy on Tuesdays.",
        "## Rollback\n\nRevert the release.",
    ]


@pytest.mark.parametrize("level", ["#", "##", "###", "######"])
def test_every_heading_level_starts_a_chunk(level):
    chunks = split_body(f"Some intro text here.\n\n{level} Heading\n\nText under the heading.")

    assert chunks[-1] == f"{level} Heading\n\nText under the heading."


def test_a_hash_without_a_space_is_not_a_heading():
    assert split_body("Some intro text here.\n\n#hashtag is not a heading.") == [
        "Some intro text here.\n\n#hashtag is not a heading."
    ]


def test_a_heading_right_after_a_line_of_text_starts_a_chunk():
    chunks = split_body("Intro line about the service.\n## Deploy\nDeploy on Tuesdays.")

    assert any(chunk.startswith("## Deploy") for chunk in chunks)


def test_short_paragraphs_are_packed_together():
    body = "\n\n".join(f"Paragraph {n} says something short." for n in range(5))

    assert split_body(body) == [body]


def test_paragraphs_are_packed_up_to_the_limit():
    body = "\n\n".join(f"Paragraph number {n} says something a little longer than before." for n in range(60))

    chunks = split_body(body, limit=300)

    assert len(chunks) > 5
    assert all(len(chunk) <= 300 for chunk in chunks)
    assert all(len(a) + 2 + len(b.split("\n\n")[0]) > 300 for a, b in pairwise(chunks))
    assert words("\n".join(chunks)) == words(body)


def test_a_very_long_paragraph_is_cut_at_sentence_ends():
    sentences = [f"Sentence {n} explains one more detail of the deployment process." for n in range(80)]
    body = " ".join(sentences)
    assert len(body) > 4 * CHUNK_CHARS

    chunks = split_body(body)

    assert len(chunks) >= 5
    assert all(len(chunk) <= CHUNK_CHARS for chunk in chunks)
    assert all(chunk.endswith(".") for chunk in chunks)
    assert words("\n".join(chunks)) == words(body)


def test_text_without_sentence_ends_is_cut_hard_and_nothing_is_lost():
    body = "x" * (CHUNK_CHARS * 2 + 17)

    chunks = split_body(body)

    assert [len(c) for c in chunks] == [CHUNK_CHARS, CHUNK_CHARS, 17]
    assert "".join(chunks) == body


def test_chunks_never_exceed_the_limit_and_keep_every_word():
    body = long_body() + "\n\n" + " ".join(f"Tail sentence {n} is here." for n in range(200)) + "\n\n" + "y" * 2000

    for limit in (120, 400, CHUNK_CHARS):
        chunks = split_body(body, limit=limit)
        assert all(0 < len(chunk) <= limit for chunk in chunks), limit
        joined = "".join(chunks)
        assert re.sub(r"\s+", "", joined) == re.sub(r"\s+", "", body), limit


def test_an_empty_body_is_one_empty_chunk():
    assert split_body("") == [""]
    assert split_body("  \n\n  ") == [""]


def test_chunk_texts_carry_the_title_and_tags_on_the_first_chunk():
    texts = index.chunk_texts("Service runbook", long_body(), ["ops", "runbook"])

    assert texts[0].startswith("Service runbook (ops, runbook)\n\n## Deploy")
    assert all(t.startswith("Service runbook\n\n## ") for t in texts[1:])


# --------------------------------------------------------------------------- model changes


@pytest.mark.django_db
def test_the_meta_table_records_schema_model_and_dimension(record):
    assert "model_name" not in index.read_meta()

    index.sync(get_embedder())

    embedder = get_embedder()
    meta = index.read_meta()
    assert {k: meta[k] for k in ("schema_version", "model_name", "dimension")} == {
        "schema_version": index.SCHEMA_VERSION,
        "model_name": embedder.name,
        "dimension": str(embedder.dimension),
    }
    # plus the per-space change tokens the caches follow
    assert set(meta) == {
        "schema_version",
        "model_name",
        "dimension",
        "docs:team",
        *(f"vectors_{name}:{space}" for name in ("base", "token") for space in ("personal", "team", "system")),
    }


@pytest.mark.django_db
def test_a_different_model_is_refused_until_reindex(make_record):
    record = make_record(
        title="Zeppelin hangar codes",
        tags=["hangar"],
        body="The zeppelin hangar door code is rotated by ticket ZX-9000 every quarter.",
    )
    original = get_embedder()
    index.sync(original)
    other = FakeEmbedder(dimension=128)
    assert other.name != original.name

    with pytest.raises(IndexModelMismatch, match=r"`python manage.py reindex`") as caught:
        index.ensure_ready(other)
    assert original.name in str(caught.value) and other.name in str(caught.value)
    with pytest.raises(IndexModelMismatch):
        search("zeppelin", mode="semantic", reader=Reader.everything(), embedder=other)

    set_embedder(other)
    try:
        for mode in ("semantic", "hybrid"):
            with pytest.raises(IndexModelMismatch, match="reindex"):
                search("zeppelin", mode=mode, reader=Reader.everything())
        with pytest.raises(CommandError, match="reindex"):
            call_command("search", "zeppelin", stdout=io.StringIO())
        with pytest.raises(CommandError, match="reindex"):
            call_command("check_index", "--sync", stdout=io.StringIO())

        output = run("reindex")

        assert "fake-hash-128 (128 dims)" in output
        assert index.read_meta()["model_name"] == "fake-hash-128"
        assert index.read_meta()["dimension"] == "128"
        response = search("zeppelin hangar", mode="semantic", reader=Reader.everything())
        assert [hit.record for hit in response.results] == [record]
        assert "Index OK." in run("check_index", "--sync")
    finally:
        set_embedder(original)
    with pytest.raises(IndexModelMismatch):
        index.ensure_ready(original)


class SameNameOtherSize(Embedder):
    name = "fake-hash-384"
    dimension = 256

    def embed(self, texts):
        return np.ones((len(texts), self.dimension), dtype=np.float32) / np.sqrt(self.dimension)


@pytest.mark.django_db
def test_a_dimension_change_under_the_same_name_is_refused(record):
    index.sync(get_embedder())
    assert get_embedder().name == SameNameOtherSize.name

    with pytest.raises(IndexModelMismatch, match="256 dimensions"):
        index.ensure_ready(SameNameOtherSize())


@pytest.mark.django_db
def test_keyword_search_needs_no_vectors_during_a_model_change(record):
    index.sync(get_embedder())
    set_embedder(FakeEmbedder(dimension=128))

    response = search("billing", mode="keyword", reader=Reader.everything())

    assert [hit.record for hit in response.results] == [record]


@pytest.mark.django_db
def test_check_reports_vectors_from_another_model(record):
    index.sync(get_embedder())

    report = index.check(FakeEmbedder(dimension=128))

    assert any("fake-hash-128" in problem and "fake-hash-384" in problem for problem in report.problems)


# --------------------------------------------------------------------------- check_index


@pytest.mark.django_db
def test_check_index_passes_on_an_empty_database():
    assert "Index OK." in run("check_index")


@pytest.mark.django_db
def test_check_index_fails_while_a_record_is_queued(make_record):
    make_record(
        title="Zeppelin hangar codes",
        tags=["hangar"],
        body="The zeppelin hangar door code is rotated by ticket ZX-9000 every quarter.",
    )
    index.sync(get_embedder())
    make_record(
        title="Lifeboat drills", tags=["harbour"], body="Lifeboat drills happen on the first Monday of the month."
    )

    output = check_fails()

    assert "PROBLEM: 1 record(s) changed but not yet embedded (queued)" in output
    assert "queued: 1" in output
    assert "Index OK." in run("check_index", "--sync")
    assert "queued: 0" in run("check_index")


@pytest.mark.django_db
def test_check_index_fails_before_any_vectors_exist(record):
    output = check_fails()

    assert "no vector index yet: 1 record(s) without vectors" in output
    assert "Index OK." in run("check_index", "--sync")


@pytest.mark.django_db
def test_check_index_finds_a_missing_trigger(record):
    run("check_index", "--sync")
    drop_trigger("retrieval_record_au")

    output = check_fails()

    assert "trigger retrieval_record_au is missing" in output
    assert "python manage.py reindex" in output
    # reindex restores the trigger and rebuilds what it missed.
    run("reindex")
    assert "Index OK." in run("check_index")
    assert trigger_exists("retrieval_record_au")


@pytest.mark.django_db
def test_migrate_recreates_a_dropped_index_trigger(record):
    drop_trigger("retrieval_record_au")

    call_command("migrate", verbosity=0, stdout=io.StringIO())

    assert trigger_exists("retrieval_record_au")


@pytest.mark.django_db
def test_check_index_finds_an_edit_the_index_missed(record):
    run("check_index", "--sync")
    drop_trigger("retrieval_record_au")
    sql(
        "UPDATE reviews_record SET body = %s WHERE id = %s",
        ["The billing API moved to the acme/payments-api repository last spring.", record.pk],
    )
    create_trigger("retrieval_record_au")

    output = check_fails("--sync")

    assert f"records whose indexed text is not their approved text: {record.public_id}" in output
    run("reindex")
    assert "Index OK." in run("check_index")
    assert keyword("payments").withheld == {}
    assert keyword("billing repository").withheld == {"edited": 1}


@pytest.mark.sqlite_only  # PostgreSQL's keyword index is a generated column: it cannot drift
@pytest.mark.django_db
def test_check_index_finds_a_keyword_index_that_drifted(record):
    run("check_index", "--sync")
    table = tables.fts("team", tables.LIVE)
    # Take the record's tokens out of the index behind the triggers' back.
    sql(
        f"INSERT INTO {table} ({table}, rowid, title, body, tags) SELECT 'delete', id, title, body, tags "
        f"FROM {tables.DOCS} WHERE id = %s",
        [record.pk],
    )

    output = check_fails()

    assert f"keyword index {table} does not match the records" in output
    run("reindex")
    assert "Index OK." in run("check_index")
    assert [hit.record for hit in keyword("billing").results] == [record]


@pytest.mark.django_db
def test_check_index_finds_a_stray_vector(record):
    run("check_index", "--sync")
    from retrieval.engines import retrieval_engine

    vector = get_embedder().embed_one("stray")
    with connection.cursor() as cursor:
        engine = retrieval_engine(cursor)
        cursor.execute(
            f"INSERT INTO {tables.VEC} (rowid, space, held, embedding) VALUES (%s, 'team', 0, "
            f"{engine.vector_placeholder()})",
            [987654, engine.vector_value(vector)],
        )

    assert "1 vector(s) without a chunk" in check_fails()
    assert "1 vector(s) without a chunk" in check_fails("--sync")
    run("reindex")
    assert "Index OK." in run("check_index")


@pytest.mark.django_db
def test_check_index_finds_a_chunk_without_its_vector(record):
    run("check_index", "--sync")
    (chunk_id,) = sql(f"SELECT id FROM {tables.CHUNKS}")[0]
    sql(f"DELETE FROM {tables.VEC} WHERE rowid = %s", [chunk_id])

    assert "1 chunk(s) without a vector" in check_fails()
    run("reindex")
    assert "Index OK." in run("check_index")


@pytest.mark.django_db
def test_check_index_finds_a_chunk_without_its_vector_copy(record):
    run("check_index", "--sync")
    sql(f"UPDATE {tables.CHUNKS} SET embedding = NULL")

    assert "2 chunk(s) without a usable vector copy" in check_fails()  # the chunk and the body-only vector
    run("reindex")
    assert "Index OK." in run("check_index")


@pytest.mark.django_db
def test_check_index_finds_a_stale_chunk(record):
    run("check_index", "--sync")
    sql(f"UPDATE {tables.CHUNKS} SET text_hash = 'garbage'")

    assert f"stale vectors (text changed since embedding): {record.public_id}" in check_fails()
    run("reindex")
    assert "Index OK." in run("check_index")


@pytest.mark.django_db
def test_check_index_finds_orphan_chunks_and_records_without_vectors(record, make_record):
    other = make_record(
        title="Lifeboat drills", tags=["harbour"], body="Lifeboat drills happen on the first Monday of the month."
    )
    run("check_index", "--sync")
    sql(f"UPDATE {tables.CHUNKS} SET record_id = 999999 WHERE record_id = %s", [other.pk])

    output = check_fails()

    assert "2 chunk(s) belong to no record" in output  # the chunk and the body-only vector
    assert f"records without vectors: {other.public_id}" in output
    run("reindex")
    assert "Index OK." in run("check_index")


@pytest.mark.django_db
def test_check_index_json_output_parses(record):
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("check_index", "--json", stdout=out)
    failing = json.loads(out.getvalue())

    assert failing["ok"] is False
    assert failing["queued"] == 1 and failing["records"] == 1
    assert any("queued" in problem for problem in failing["problems"])

    passing = json.loads(run("check_index", "--sync", "--json"))

    assert passing == {
        "model": get_embedder().name,
        "dimension": get_embedder().dimension,
        "records": 1,
        "chunks": 2,  # the chunk and the body-only vector
        "vectors": 2,
        "queued": 0,
        "problems": [],
        "ok": True,
    }
