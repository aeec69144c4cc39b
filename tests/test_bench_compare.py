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
