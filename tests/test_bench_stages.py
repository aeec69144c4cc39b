"""The per-stage breakdown of a search: the stopwatch is off unless a
benchmark turns it on, times every stage of a hybrid search through the agent
API, and changes nothing a search returns."""

from __future__ import annotations

import pytest

from devtools.bench_stages import TOTAL, breakdown, table
from mcp_bridge import agent_api
from retrieval import stages

EXPECTED = [
    "agent API: limiter, inputs",
    "spaces, reconcile, query terms",
    "query embedding",
    "keyword pool (BM25)",
    "vector pool (nearest)",
    "statistics",
    "fusion",
    "gate",
    "serialisation (shapes)",
    "serialisation (JSON)",
]


def test_the_clock_is_off_outside_a_timing_block():
    assert stages.clock() is None
    with stages.timing() as clock:
        assert stages.clock() is clock
        clock.lap("one")
        clock.lap("one")
        clock.lap("two")
    assert stages.clock() is None
    assert list(clock.laps) == ["one", "two"]
    assert all(ns >= 0 for ns in clock.laps.values())


@pytest.mark.django_db
def test_breakdown_times_each_stage_of_a_hybrid_search(agent, make_record):
    make_record()
    make_record(title="Ledger worker owner", body="Priya owns the ledger worker; it restarts every weekday at 09:00.")
    queries = ["billing API repository", "who owns the ledger worker", "acme/billing-api"]

    per_stage = breakdown(agent, queries)

    assert [name for name in EXPECTED if name not in per_stage] == []
    assert list(per_stage)[-1] == TOTAL
    assert all(len(values) == len(queries) for values in per_stage.values())
    assert all(v >= 0 for values in per_stage.values() for v in values)
    # The stages chain from one mark to the next, so they cannot take longer than the whole call.
    for n in range(len(queries)):
        parts = sum(values[n] for name, values in per_stage.items() if name != TOTAL)
        assert parts <= per_stage[TOTAL][n] + 5.0
    lines = table(per_stage)
    assert lines[0].split()[:3] == ["stage", "p50", "ms"]
    assert len(lines) == len(per_stage) + 1


@pytest.mark.django_db
def test_timing_a_search_changes_nothing_it_returns(agent, make_record):
    make_record()
    plain = agent_api.search(agent, "billing API repository")
    with stages.timing() as clock:
        timed = agent_api.search(agent, "billing API repository")
    assert clock.laps
    for answer in (plain, timed):
        answer.pop("took_ms")
    assert timed == plain
    assert [hit["title"] for hit in plain["results"]] == ["Billing API repository"]
