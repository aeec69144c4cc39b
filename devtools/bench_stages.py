"""Where the milliseconds of one search go, in process: the agent API's
search (what MCP and REST both call) run under the stage stopwatch
(retrieval/stages.py), plus the JSON encoding a transport would do."""

from __future__ import annotations

import json
import statistics
import time

from django.core.serializers.json import DjangoJSONEncoder

from mcp_bridge import agent_api
from retrieval import stages
from reviews.models import Agent

TOTAL = "total in process"


def breakdown(agent: Agent, queries: list[str], *, mode: str = "hybrid", limit: int = 8) -> dict[str, list[float]]:
    """Milliseconds per stage for each query, in the order the stages ran, and
    ``TOTAL`` (the wall time of the whole call). A stage a search skipped (no
    identifier in the query, say) counts 0 for it, so every list has one
    entry per query and the medians compare."""
    runs: list[dict[str, int]] = []
    for query in queries:
        with stages.timing() as clock:
            t0 = time.perf_counter_ns()
            data = agent_api.search(agent, query, mode=mode, limit=limit)
            json.dumps(data, cls=DjangoJSONEncoder)
            clock.lap("serialisation (JSON)")
            total = time.perf_counter_ns() - t0
        runs.append({**clock.laps, TOTAL: total})
    names: list[str] = []
    for run in runs:
        names += [name for name in run if name not in names and name != TOTAL]
    return {name: [run.get(name, 0) / 1e6 for run in runs] for name in [*names, TOTAL]}


def table(per_stage: dict[str, list[float]]) -> list[str]:
    """Median, p95 and mean per stage, and each mean's share of the mean
    total. Means add up to the total; medians need not (on a busy machine a
    search is pre-empted in a different stage each time), so both are shown."""
    total = statistics.fmean(per_stage[TOTAL]) or 1.0
    lines = [f"{'stage':<36} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'share':>6}"]
    for name, values in per_stage.items():
        ordered = sorted(values)
        p50, p95 = statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]
        mean = statistics.fmean(ordered)
        lines.append(f"{name:<36} {p50:>8.2f} {p95:>8.2f} {mean:>8.2f} {mean / total:>6.0%}")
    return lines
