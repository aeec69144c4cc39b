"""bench_locomo maps a LoCoMo-shaped file the documented way (one approved
record per turn, questions without evidence left out, unknown evidence ids
counted as misses), and the dev/test split is a fixed partition."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from devtools.evaluation import in_split, split_of
from devtools.management.commands.bench_locomo import _turns

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLE = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:00 pm on 2 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I gave a talk about beekeeping at the library."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! I adopted a grey cat called Pebble last week."},
        ],
        "session_2_date_time": "9:30 am on 9 May, 2023",
        "session_2": [
            {
                "speaker": "Ana",
                "dia_id": "D2:1",
                "text": "Look at the hive we built together.",
                "blip_caption": "a photo of a wooden beehive",
            },
            {"speaker": "Ben", "dia_id": "D2:2", "text": "Pebble sleeps on my keyboard all day now."},
        ],
    },
    "qa": [
        {"question": "What did Ana talk about at the library?", "evidence": ["D1:1"], "category": 4},
        {"question": "What is the name of Ben's cat?", "evidence": ["D1:2", "D9:99"], "category": 1},
        {"question": "What does Ana like?", "evidence": [], "category": 3},
        {"question": "Adversarial question", "evidence": ["D1:1"], "category": 5},
    ],
}


def test_each_turn_becomes_one_event_record_as_documented():
    turns = _turns(SAMPLE)

    assert [dia for dia, _fields in turns] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    _dia, photo = turns[2]
    assert photo == {
        "kind": "event",
        "space": "personal",
        "title": "Ana, session 2, turn D2:1",
        "body": "On 9:30 am on 9 May, 2023, Ana said: Look at the hive we built together. "
        "[shares a photo: a photo of a wooden beehive]",
        "tags": ["conv-test"],
    }


def test_the_bench_leaves_out_questions_without_evidence_and_counts_unknown_evidence(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    out = io.StringIO()

    call_command("bench_locomo", str(path), "--json", "--k", "1,5", stdout=out, stderr=io.StringIO())

    report = json.loads(out.getvalue())
    assert report["totals"]["turns"] == 4
    assert report["totals"]["questions"] == 2  # category 5 and the one without evidence are out
    assert report["totals"]["no_evidence"] == 1
    assert report["totals"]["unknown_evidence"] == 1
    rows = {(r["split"], r["mode"], r["category"]): r for r in report["recall"]}
    keyword = rows[("all", "keyword", "all")]
    assert keyword["n"] == 2
    # "What is the name of Ben's cat?" can find D1:2 but never D9:99: never all of its evidence.
    assert rows[("all", "keyword", "multi-hop")]["all@5"] == 0.0


def test_the_split_is_a_fixed_partition_by_query_id():
    ids = [f"conv-{n}:{q}" for n in range(5) for q in range(40)]

    dev = {i for i in ids if in_split(i, "dev")}
    test = {i for i in ids if in_split(i, "test")}

    assert dev and test and not dev & test and dev | test == set(ids)
    assert all(in_split(i, "all") for i in ids)
    # Pinned: the published dev/test tables depend on these never moving.
    assert [split_of(i) for i in ("conv-26:0", "conv-26:1", "conv-26:2")] == ["test", "test", "dev"]
    assert 0.35 < len(dev) / len(ids) < 0.65


@pytest.mark.sqlite_only  # --keep caches SQLite files (refused on PostgreSQL)
def test_keep_reuses_each_imported_conversation_and_gives_the_same_table(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    keep = tmp_path / "cache"

    def run():
        out = io.StringIO()
        call_command("bench_locomo", str(path), "--json", "--keep", str(keep), stdout=out, stderr=io.StringIO())
        return json.loads(out.getvalue())

    first, second = run(), run()

    assert first["totals"]["cached"] == 0 and first["totals"]["imported"] == 4
    assert second["totals"]["cached"] == 1 and second["totals"]["imported"] == 0
    assert second["recall"] == first["recall"]
    assert len(list(keep.glob("*.sqlite3"))) == 1


@pytest.mark.sqlite_only  # --keep caches SQLite files (refused on PostgreSQL)
def test_keep_never_reuses_an_entry_made_from_other_turns(tmp_path):
    path = tmp_path / "locomo.json"
    keep = tmp_path / "cache"
    path.write_text(json.dumps([SAMPLE]))
    call_command("bench_locomo", str(path), "--json", "--keep", str(keep), stdout=io.StringIO(), stderr=io.StringIO())
    changed = json.loads(json.dumps(SAMPLE))
    changed["conversation"]["session_1"][0]["text"] = "I gave a talk about pottery at the library."
    path.write_text(json.dumps([changed]))
    out = io.StringIO()

    call_command("bench_locomo", str(path), "--json", "--keep", str(keep), stdout=out, stderr=io.StringIO())

    assert json.loads(out.getvalue())["totals"]["cached"] == 0
    assert len(list(keep.glob("*.sqlite3"))) == 2
