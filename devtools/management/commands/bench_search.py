import os
import random
import statistics
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils import timezone

from dbengine import database_engine
from devtools.scratch import scratch_database, use_engine
from devtools.synthetic import make_queries, make_record, populate_corpus
from retrieval import index
from retrieval import search as engine
from retrieval.embeddings import get_embedder, make_embedder
from retrieval.gate import Reader
from retrieval.index import vector_texts
from reviews.history import Moment

KINDS = ("onnx", "torch", "fake")


def _p(values, share):
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * share) - 1)]


class Command(BaseCommand):
    help = (
        "Benchmark search on synthetic corpora built in a temporary data folder, for each embedder side by "
        "side in one run (so their ratios are measured under the same load): query embedding p50/p95, "
        "indexing records/s, and per mode search p50/p95/max latency (query embedding included), index "
        "build time and database size."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--records", default="1000,10000", help="comma-separated corpus sizes, e.g. 1000,10000,100000"
        )
        parser.add_argument("--queries", type=int, default=200, help="queries per mode and size")
        parser.add_argument("--modes", default="keyword,semantic,hybrid")
        parser.add_argument(
            "--embedders",
            default="onnx,torch",
            help=f"comma-separated, from {', '.join(KINDS)}; default both real ones (VETTED_EMBEDDER is ignored)",
        )
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--spaces",
            default="personal,team,system",
            help="the reader's spaces (the synthetic corpus is 90%% team, 10%% personal)",
        )
        parser.add_argument("--keep", action="store_true", help="keep the temporary databases and print where")
        parser.add_argument(
            "--engine",
            default="",
            help="comma-separated database engines, side by side in one run: sqlite, postgres (default: the "
            "configured one). PostgreSQL runs also time semantic/hybrid through the HNSW index "
            "(VETTED_VECTOR_CACHE off) and report its recall@8 against exact search",
        )
        parser.add_argument(
            "--ef-search",
            default="",
            help="comma-separated hnsw.ef_search values for the PostgreSQL HNSW rows and recall, each in the same "
            "run, e.g. 120,160,200 (default: the configured one, dbengine/postgres EF_SEARCH)",
        )
        # as-of: the same queries through the as-of gate, as rows "MODE@as_of".
        parser.add_argument("--as-of", action="store_true", help="also time each mode with as_of (a moment ago)")

    def handle(self, *args, **opts):
        try:
            sizes = [int(s) for s in opts["records"].split(",") if s.strip()]
        except ValueError:
            raise CommandError("--records takes comma-separated whole numbers, e.g. 1000,10000") from None
        if not sizes or min(sizes) < 10:
            raise CommandError("--records: each size must be at least 10")
        modes = [m for m in opts["modes"].split(",") if m]
        kinds = [k.strip() for k in opts["embedders"].split(",") if k.strip()]
        if not kinds or any(k not in KINDS for k in kinds) or len(set(kinds)) != len(kinds):
            raise CommandError(f"--embedders: comma-separated, each once, from {', '.join(KINDS)}")
        embedders, load_s = {}, {}
        for kind in kinds:
            started = time.perf_counter()
            # The configured one is the process-wide instance (search() may fall back to it).
            embedders[kind] = get_embedder() if kind == settings.VETTED_EMBEDDER else make_embedder(kind)
            load_s[kind] = time.perf_counter() - started
        engines = [e.strip() for e in opts["engine"].split(",") if e.strip()] or [database_engine(connection).name]
        if any(e not in ("sqlite", "postgres") for e in engines) or len(set(engines)) != len(engines):
            raise CommandError("--engine: comma-separated, each once, from sqlite, postgres")
        embed = self._embedding_latency(embedders, opts)
        batch = self._batch_throughput(embedders, min(sizes[0], 1000), opts)
        try:
            self.ef_values = [int(v) for v in opts["ef_search"].split(",") if v.strip()]
        except ValueError:
            raise CommandError("--ef-search takes comma-separated whole numbers, e.g. 120,160,200") from None
        if any(not 1 <= v <= 1000 for v in self.ef_values):
            raise CommandError("--ef-search: each value must be from 1 to 1000 (pgvector's range)")
        rows = []
        self.recall: list[tuple[int, str, int, float, int]] = []
        for size in sizes:
            for engine_name in engines:
                with use_engine(engine_name):
                    for kind in kinds:
                        rows.extend(self._run(size, modes, opts, kind, embedders[kind], engine_name))
        self._report(kinds, embedders, load_s, embed, batch, rows, modes, opts)

    def _embedding_latency(self, embedders, opts):
        """Per query embedding times, the embedders interleaved query by query
        so that a burst of load elsewhere hits both alike."""
        rng = random.Random(opts["seed"])
        queries = make_queries(rng, [make_record(rng, n) for n in range(200)], max(opts["queries"], 50))
        times: dict[str, list[float]] = {kind: [] for kind in embedders}
        cpu = dict.fromkeys(embedders, 0.0)
        for embedder in embedders.values():
            for q in queries[:5]:
                embedder.embed_one(q)  # warm
        for q in queries:
            for kind, embedder in embedders.items():
                c0, t0 = time.process_time(), time.perf_counter()
                embedder.embed_one(q)
                times[kind].append((time.perf_counter() - t0) * 1000)
                cpu[kind] += time.process_time() - c0
        return {kind: (statistics.median(t), _p(t, 0.95), cpu[kind] * 1000 / len(queries)) for kind, t in times.items()}

    def _batch_throughput(self, embedders, size, opts):
        """Indexing speed of the embedding alone (what sync() hands the
        embedder: every chunk of 256 records at once), the embedders taking
        turns batch by batch, so a change of load elsewhere hits both alike;
        the whole-index figures below run one embedder after the other."""
        rng = random.Random(opts["seed"])
        records = [
            [text for _seq, text in vector_texts(r["title"], r["body"], r["tags"])]
            for r in (make_record(rng, n) for n in range(size))
        ]
        wall, cpu = dict.fromkeys(embedders, 0.0), dict.fromkeys(embedders, 0.0)
        for start in range(0, size, 256):
            texts = [t for chunks in records[start : start + 256] for t in chunks]
            for kind, embedder in embedders.items():
                c0, t0 = time.process_time(), time.perf_counter()
                embedder.embed(texts)
                wall[kind] += time.perf_counter() - t0
                cpu[kind] += time.process_time() - c0
        result = {kind: (size / wall[kind], size / max(cpu[kind], 1e-9)) for kind in embedders}
        return {**result, "records": size, "texts": sum(len(chunks) for chunks in records)}

    def _run(self, size, modes, opts, kind, embedder, engine_name="sqlite"):
        rng = random.Random(opts["seed"])  # the same corpus and queries for every embedder
        with scratch_database(keep=opts["keep"]) as folder:
            if opts["keep"]:
                self.stderr.write(f"corpus of {size} ({kind}): {folder}")
            specs, insert_s, _ = populate_corpus(size, rng, embedder, embed=False)
            # Indexing timed here, in wall and in CPU seconds: on a shared
            # machine the CPU figure is the steadier one for a ratio.
            wall, cpu = time.perf_counter(), time.process_time()
            index.sync(embedder, batch=256)
            index_s, index_cpu = time.perf_counter() - wall, time.process_time() - cpu
            build_s = insert_s + index_s
            postgres = not database_engine(connection).is_file
            with connection.cursor() as cursor:
                if postgres:
                    # Planner statistics and the visibility map of the fresh tables, as
                    # autovacuum makes them after a bulk insert (index-only scans of the
                    # BM25 term rows read the heap until it has).
                    cursor.execute("VACUUM ANALYZE")
                    cursor.execute("SELECT pg_database_size(current_database())")
                    db_mb = cursor.fetchone()[0] / 1e6
                else:
                    cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    db_mb = sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6
            queries = make_queries(rng, specs, opts["queries"])
            reader = Reader.for_spaces([s for s in opts["spaces"].split(",") if s])
            rows = []
            moments = [None, Moment(timezone.now())] if opts["as_of"] else [None]
            # On PostgreSQL also through the HNSW index instead of the in-memory copy.
            from dbengine.postgres.base import EF_SEARCH

            # (label, mode, through the in-memory copy, hnsw.ef_search)
            runs: list[tuple[str, str, bool, int | None]] = [(m, m, True, None) for m in modes]
            efs = (self.ef_values or [EF_SEARCH]) if postgres else []
            for ef in efs:
                suffix = f"-hnsw@ef{ef}" if self.ef_values else "-hnsw"
                runs += [(f"{m}{suffix}", m, False, ef) for m in modes if m != "keyword"]
                self._set_ef(ef)
                self.recall.append((size, kind, ef, *self._hnsw_recall(queries, embedder)))
            cache = settings.VETTED_VECTOR_CACHE
            for (label, mode, cached, run_ef), moment in ((run, at) for run in runs for at in moments):
                settings.VETTED_VECTOR_CACHE = cached
                if run_ef is not None:
                    self._set_ef(run_ef)
                engine.search(queries[0], mode=mode, reader=reader, embedder=embedder, count_access=False)  # warm
                timings = []
                for q in queries:
                    t0 = time.perf_counter()
                    engine.search(
                        q, mode=mode, limit=8, reader=reader, embedder=embedder, count_access=False, moment=moment
                    )
                    timings.append((time.perf_counter() - t0) * 1000)
                settings.VETTED_VECTOR_CACHE = cache
                rows.append(
                    {
                        "engine": engine_name,
                        "records": size,
                        "embedder": kind,
                        "mode": label if moment is None else f"{label}@as_of",
                        "p50": statistics.median(timings),
                        "p95": _p(timings, 0.95),
                        "max": max(timings),
                        "build": build_s,
                        # Indexing = everything after the rows are in: chunking, embedding, vector writes.
                        "index_rps": size / max(index_s, 1e-9),
                        "index_cpu_rps": size / max(index_cpu, 1e-9),
                        "db_mb": db_mb,
                    }
                )
            if efs:
                self._set_ef(EF_SEARCH)
            return rows

    def _set_ef(self, ef):
        """This session's HNSW breadth (the configured one is a startup option of every connection)."""
        with connection.cursor() as cursor:
            cursor.execute(f"SET hnsw.ef_search = {int(ef)}")

    def _hnsw_recall(self, queries, embedder):
        """recall@8 of HNSW against exact search, per space and state as
        search draws them: the records among the 8 nearest chunks."""
        from retrieval import tables, vectors
        from retrieval.engines import retrieval_engine
        from retrieval.engines.base import best_per_record

        found = wanted = 0
        with connection.cursor() as cursor:
            for q in queries:
                vector = embedder.embed_one(q)
                for space in ("team", "personal"):
                    snap = vectors.cache.current(cursor, space, len(vector))
                    exact, _ = vectors.nearest([snap], vector, 8, tables.LIVE)
                    knn = retrieval_engine(cursor).knn(cursor, vector, 8, space, tables.LIVE)
                    approx, _ = best_per_record(knn)
                    found += len(set(exact) & set(approx))
                    wanted += len(exact)
        return found / max(wanted, 1), wanted

    def _report(self, kinds, embedders, load_s, embed, batch, rows, modes, opts):
        out = self.stdout.write
        out("")
        out(
            f"{opts['queries']} queries per mode; VETTED_EMBED_THREADS={settings.VETTED_EMBED_THREADS} "
            f"(query threads; batches use every core); cpu count: {os.cpu_count()}; "
            f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
        out(
            f"{'embedder':<9} {'model':<20} {'load s':>7} {'embed p50 ms':>13} {'embed p95 ms':>13} "
            f"{'cpu ms/query':>13}"
        )
        for kind in kinds:
            p50, p95, cpu = embed[kind]
            out(f"{kind:<9} {embedders[kind].name:<20} {load_s[kind]:>7.1f} {p50:>13.2f} {p95:>13.2f} {cpu:>13.2f}")
        out("")
        out(
            f"{'engine':<8} {'records':>8} {'embedder':<9} {'index rec/s':>11} {'rec/cpu-s':>9} {'build s':>8} "
            f"{'mode':<23} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'db MB':>7}"
        )
        for row in rows:
            out(
                f"{row['engine']:<8} {row['records']:>8} {row['embedder']:<9} {row['index_rps']:>11.1f} "
                f"{row['index_cpu_rps']:>9.1f} {row['build']:>8.1f} "
                f"{row['mode']:<23} {row['p50']:>8.1f} {row['p95']:>8.1f} {row['max']:>8.1f} {row['db_mb']:>7.1f}"
            )
        if self.recall:
            from dbengine.postgres.base import EF_SEARCH

            out("")
            if self.ef_values:
                out(f"PostgreSQL HNSW recall@8 against exact search (configured hnsw.ef_search = {EF_SEARCH}):")
                for size, kind, ef, recall, wanted in self.recall:
                    out(f"  {size} records, {kind}, ef_search {ef}: {recall:.4f} ({wanted} nearest records)")
            else:
                out(f"PostgreSQL HNSW recall@8 against exact search (hnsw.ef_search = {EF_SEARCH}):")
                for size, kind, _ef, recall, wanted in self.recall:
                    out(f"  {size} records, {kind}: {recall:.4f} ({wanted} nearest records)")
        # The embedder ratios below compare rows of the first engine.
        rows = [row for row in rows if row["engine"] == rows[0]["engine"]]
        out("")
        out(f"embedding alone, {batch['records']} records ({batch['texts']} chunks) in batches of 256 records,")
        out("the embedders taking turns batch by batch:")
        out(f"{'embedder':<9} {'records/s':>10} {'rec/cpu-s':>10}")
        for kind in kinds:
            out(f"{kind:<9} {batch[kind][0]:>10.1f} {batch[kind][1]:>10.1f}")
        if len(kinds) >= 2:
            # torch is the baseline when it is there (the ratio reads "onnx is N times faster").
            base = "torch" if "torch" in kinds else kinds[1]
            other = "onnx" if "onnx" in kinds and base != "onnx" else next(k for k in kinds if k != base)
            out("")
            out(f"{base} / {other} (how many times faster {other} is, same run):")
            out(
                f"  query embedding p50: {embed[base][0] / embed[other][0]:.2f}x "
                f"(CPU per query: {embed[base][2] / embed[other][2]:.2f}x)"
            )
            for size in sorted({r["records"] for r in rows}):
                by = {(r["embedder"], r["mode"]): r for r in rows if r["records"] == size}
                first = modes[0]
                a, b = by[(other, first)], by[(base, first)]
                parts = [
                    f"indexing {a['index_rps'] / b['index_rps']:.2f}x "
                    f"(per CPU second: {a['index_cpu_rps'] / b['index_cpu_rps']:.2f}x)"
                ]
                parts += [f"{m} p50 {by[(base, m)]['p50'] / by[(other, m)]['p50']:.2f}x" for m in modes]
                out(f"  {size} records: " + ", ".join(parts))
            out(
                f"  embedding alone, taking turns: {batch[other][0] / batch[base][0]:.2f}x "
                f"(per CPU second: {batch[other][1] / batch[base][1]:.2f}x)"
            )
