"""Benchmark the header's "Changed outside Vetted" count at N live records.

Seeds a temporary database (never the real one) with N approved records,
changes a few outside Vetted (raw SQL), then prints median / p95 times of:
the full pass the count replaces (every live record's SHA-256), the count
itself when nothing changed since the last page, right after one more
out-of-band edit, and the whole nav_counts() of every page.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from devtools.scratch import scratch_database
from devtools.synthetic import populate_corpus
from inbox import outside_edits
from inbox.page_helpers import nav_counts
from retrieval.embeddings import FakeEmbedder
from reviews.models import Record


class Command(BaseCommand):
    help = "Time the header's changed-outside-Vetted count at N live records (median/p95 over R runs)."

    def add_arguments(self, parser):
        parser.add_argument("--records", type=int, default=10_000, help="approved records to seed (default 10000)")
        parser.add_argument("--runs", type=int, default=30, help="runs per measurement (default 30)")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, **opts):
        size, runs = opts["records"], opts["runs"]
        if size < 10 or runs < 1:
            raise CommandError("--records must be at least 10 and --runs at least 1")
        with scratch_database():
            populate_corpus(size, random.Random(opts["seed"]), FakeEmbedder())
            ids = list(Record.objects.order_by("pk").values_list("pk", flat=True))
            for pk in ids[:: max(1, size // 5)]:
                _edit(pk)
            expected = sum(1 for r in Record.objects.live().iterator(chunk_size=500) if r.edited_since_approval)
            started = time.perf_counter()
            cold = outside_edits.edited_count()
            cold_ms = (time.perf_counter() - started) * 1000
            if cold != expected:
                raise CommandError(f"the count says {cold}, the full pass {expected}")
            edits = iter(ids[1:])

            def after_an_edit() -> None:
                _edit(next(edits))
                outside_edits.edited_count()

            rows = [
                ("full pass (before)", _time(lambda: [r.edited_since_approval for r in Record.objects.live()], runs)),
                ("count, nothing new", _time(outside_edits.edited_count, runs)),
                ("count, one new edit", _time(after_an_edit, runs)),
                ("nav_counts()", _time(nav_counts, runs)),
            ]
        self.stdout.write(
            f"{size} live records, {expected} changed outside Vetted; first count in a process {cold_ms:.0f} ms"
        )
        self.stdout.write(f"{'measurement':<22} {'median ms':>10} {'p95 ms':>8}")
        for label, (median, p95) in rows:
            self.stdout.write(f"{label:<22} {median:>10.1f} {p95:>8.1f}")


def _edit(pk: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE reviews_record SET body = body || ' (edited by hand)' WHERE id = %s", [pk])


def _time(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
