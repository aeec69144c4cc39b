"""The tables `manage.py stress` prints: one row of counts and latencies per
operation, and the flood comparison (the other agents' searches before and
during one agent's flood)."""

from __future__ import annotations

import statistics
from collections.abc import Callable

FLOOD_NICE = 10  # the flooding client's nice level (the command starts it so)


def row(write: Callable[[str], object], label: str, rows: list[dict], elapsed: float) -> None:
    ms = sorted(r["ms"] for r in rows) or [0.0]
    count = {k: sum(1 for r in rows if r["result"] == k) for k in ("ok", "refused", "failed")}
    write(
        f"{label:<16} {len(rows):>7} {count['ok']:>7} {count['refused']:>8} {count['failed']:>7} "
        f"{len(rows) / elapsed if elapsed else 0:>7.1f} {statistics.median(ms):>8.1f} "
        f"{ms[max(0, int(len(ms) * 0.95) - 1)]:>8.1f}"
    )


def flood_report(write: Callable[[str], object], flood: list[dict], items: list[dict], elapsed: float, opts) -> None:
    """The other agents' searches before the flood and during it, side by side."""
    start = next((i["started"] for i in flood if "started" in i), None)
    calls = [i for i in flood if i.get("op") == "search_flood"]
    if start is None or not calls:
        write("\nflood: the flooding agent logged nothing (see flood.err with --keep)")
        return
    end = max(i["at"] for i in calls)
    searches = [i for i in items if i.get("role") == "agent" and i["op"].startswith("search_")]
    before = [i for i in searches if i["at"] < start]
    during = [i for i in searches if start <= i["at"] <= end]
    write("")
    write(
        f"flood: one agent, {opts['flood']} concurrent workers searching back to back for "
        f"{end - start:.0f} s (client at nice {FLOOD_NICE}); the other {opts['agents']} agents' "
        "searches (REST and MCP)"
    )
    write(f"{'':<16} {'calls':>7} {'ok':>7} {'refused':>8} {'failed':>7} {'per s':>7} {'p50 ms':>8} {'p95 ms':>8}")
    row(write, "others, before", before, start - min((i["at"] for i in searches), default=start))
    row(write, "others, during", during, end - start)
    row(write, "the flooder", calls, end - start)
    if before and during:
        ratio = statistics.median(i["ms"] for i in during) / statistics.median(i["ms"] for i in before)
        write(f"others' search median during / before the flood: {ratio:.2f}")


def database_integrity() -> tuple[str, bool, str]:
    """The engine's own consistency check, as a (label, ok, detail) row:
    SQLite's ``PRAGMA integrity_check``; on PostgreSQL, that no index is left
    invalid (a crashed or failed build) and the write log's triggers hold."""
    from django.db import connection

    from dbengine import database_engine

    with connection.cursor() as cursor:
        return database_engine(connection).integrity(cursor)
