"""bench_compare runs two checkouts side by side; here this tree against its
own HEAD, with a tiny corpus and the fake embedder."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.slow
def test_compare_against_head_prints_both_sides_and_the_ratio():
    """Slow: creates a git worktree and starts two daemons (one per checkout), each set up through its own manage.py."""
    out = StringIO()
    call_command("bench_compare", "HEAD", records=20, searches=6, embedder="fake", json=True, stdout=out)
    lines = out.getvalue().strip().splitlines()
    figures = json.loads(lines[-1])

    assert any(line.startswith("load average at start") for line in lines)
    header = next(line for line in lines if line.startswith("interface"))
    assert header.split() == ["interface", "side", "n", "p50", "ms", "p95", "ms", "max", "ms", "with", "hits"]
    assert [(row["interface"], row["side"][:1]) for row in figures["rows"]] == [
        ("MCP", "A"),
        ("MCP", "B"),
        ("REST", "A"),
        ("REST", "B"),
    ]
    for row in figures["rows"]:
        assert row["n"] == 6
        assert row["with_hits"] > 0, row  # both sides answered, with results
        assert 0 < row["p50"] <= row["p95"] <= row["max"]
    for interface in ("MCP", "REST"):
        assert figures[f"ratio_{interface}"]["p50"] > 0
        assert sum(1 for line in lines if line.startswith(interface) and "ratio B/A" in line) == 1


def test_the_corpus_is_written_for_new_and_older_checkouts(tmp_path):
    import random

    from devtools.management.commands.bench_compare import older_corpus, write_corpus

    path = tmp_path / "corpus.jsonl"
    specs = write_corpus(path, 5, random.Random(1))
    new = [json.loads(line) for line in path.read_text().splitlines()]
    old = [json.loads(line) for line in older_corpus(path).read_text().splitlines()]
    assert [row["space"] for row in new] == [row["scope"] for row in old] == [s["space"] for s in specs]
    assert all("scope" not in row for row in new) and all("space" not in row for row in old)
    assert [{k: v for k, v in row.items() if k != "space"} for row in new] == [
        {k: v for k, v in row.items() if k != "scope"} for row in old
    ]


@pytest.mark.parametrize("refusal", ["line 1: space: unknown field; allowed: scope", "line 1: title: required"])
def test_a_checkout_that_refuses_the_space_key_imports_the_older_corpus(tmp_path, monkeypatch, refusal):
    from devtools.bench_sides import Side, SideFailed

    side = Side("B old", tmp_path, tmp_path / "home", "fake", None)
    imported: list[str] = []

    def manage(self, *args, stdin_path=None):
        if args[0] == "import_records":
            imported.append(args[1])
            if args[1] == "new.jsonl":
                raise SideFailed(f"B old: manage.py import_records failed:\n{refusal}")
        if args[0] == "create_agent" and "--spaces" in args:
            raise SideFailed(
                "B old: manage.py create_agent failed:\nerror: the following arguments are required: --scopes"
            )
        return "tok_123\n"

    monkeypatch.setattr(Side, "manage", manage)
    if "space" in refusal:
        side.build("new.jsonl", "old.jsonl")
        assert imported == ["new.jsonl", "old.jsonl"]
        assert side.token == "tok_123"
    else:
        with pytest.raises(SideFailed):  # any other refusal is the checkout's answer, not retried
            side.build("new.jsonl", "old.jsonl")
        assert imported == ["new.jsonl"]
