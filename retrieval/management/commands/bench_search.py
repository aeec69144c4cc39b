import os
import random
import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from retrieval import search as engine
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from retrieval.scratch import scratch_database
from retrieval.synthetic import make_queries, populate_corpus


class Command(BaseCommand):
    help = (
        "Benchmark search on synthetic corpora built in a temporary data folder: per mode p50/p95/max "
        "latency (query embedding included), index build time and database size."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--records", default="1000,10000", help="comma-separated corpus sizes, e.g. 1000,10000,100000"
        )
        parser.add_argument("--queries", type=int, default=200, help="queries per mode and size")
        parser.add_argument("--modes", default="keyword,semantic,hybrid")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--scopes",
            default="personal,team,system",
            help="the reader's scopes (the synthetic corpus is 90%% team, 10%% personal)",
        )
        parser.add_argument("--keep", action="store_true", help="keep the temporary databases and print where")

    def handle(self, *args, **opts):
        try:
            sizes = [int(s) for s in opts["records"].split(",") if s.strip()]
        except ValueError:
            raise CommandError("--records takes comma-separated whole numbers, e.g. 1000,10000") from None
        if not sizes or min(sizes) < 10:
            raise CommandError("--records: each size must be at least 10")
        modes = [m for m in opts["modes"].split(",") if m]
        embedder = get_embedder()
        rows = []
        for size in sizes:
            rows.extend(self._run(size, modes, opts, embedder))
        self.stdout.write("")
        self.stdout.write(
            f"model: {embedder.name}; {opts['queries']} queries per mode; torch threads: "
            f"{_threads()}; cpu count: {os.cpu_count()}"
        )
        header = f"{'records':>8} {'mode':<9} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'build s':>9} {'db MB':>8}"
        self.stdout.write(header)
        for row in rows:
            self.stdout.write(
                f"{row['records']:>8} {row['mode']:<9} {row['p50']:>8.1f} {row['p95']:>8.1f} {row['max']:>8.1f} "
                f"{row['build']:>9.1f} {row['db_mb']:>8.1f}"
            )

    def _run(self, size, modes, opts, embedder):
        rng = random.Random(opts["seed"])
        with scratch_database(keep=opts["keep"]) as folder:
            if opts["keep"]:
                self.stderr.write(f"corpus of {size}: {folder}")
            specs, insert_s, build_s = populate_corpus(size, rng, embedder)
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db_mb = sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6
            queries = make_queries(rng, specs, opts["queries"])
            reader = Reader.for_scopes([s for s in opts["scopes"].split(",") if s])
            rows = []
            for mode in modes:
                engine.search(queries[0], mode=mode, reader=reader, embedder=embedder, count_access=False)  # warm
                timings = []
                for q in queries:
                    t0 = time.perf_counter()
                    engine.search(q, mode=mode, limit=8, reader=reader, embedder=embedder, count_access=False)
                    timings.append((time.perf_counter() - t0) * 1000)
                timings.sort()
                rows.append(
                    {
                        "records": size,
                        "mode": mode,
                        "p50": statistics.median(timings),
                        "p95": timings[int(len(timings) * 0.95) - 1],
                        "max": timings[-1],
                        "build": build_s,
                        "db_mb": db_mb,
                        "insert": insert_s,
                    }
                )
            return rows


def _threads():
    try:
        import torch

        return torch.get_num_threads()
    except ImportError:  # pragma: no cover
        return "-"
