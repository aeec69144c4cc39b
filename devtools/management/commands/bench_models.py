import os
import random
import statistics
import time

from django.core.management.base import BaseCommand, CommandError

from common.defaults import MODEL_CHOICES
from devtools.scratch import scratch_database
from devtools.synthetic import make_queries, make_record, populate_corpus
from retrieval import index
from retrieval.embeddings import make_embedder


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


class Command(BaseCommand):
    help = (
        "Compare the named embedding models (VETTED_MODEL) in one run, so their ratios share the machine's "
        "load: query embedding p50/p95 over single queries (the models interleaved query by query), and "
        "indexing records/s of a synthetic corpus through index.sync in a throwaway database (one model "
        "after the other, wall and CPU seconds)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--models", default=",".join(MODEL_CHOICES), help="comma-separated VETTED_MODEL names")
        parser.add_argument("--embedder", default="onnx", choices=("onnx", "torch"), help="the runtime of both")
        parser.add_argument("--queries", type=int, default=200, help="single queries per model")
        parser.add_argument("--records", type=int, default=1000, help="records indexed per model (0: skip)")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, **opts):
        models = [m.strip() for m in opts["models"].split(",") if m.strip()]
        if not models or len(set(models)) != len(models) or any(m not in MODEL_CHOICES for m in models):
            raise CommandError(f"--models: comma-separated, each once, from {', '.join(MODEL_CHOICES)}")
        if opts["queries"] < 10 or opts["records"] < 0:
            raise CommandError("--queries must be at least 10 and --records at least 0")
        embedders = {m: make_embedder(opts["embedder"], m) for m in models}
        rng = random.Random(opts["seed"])
        queries = make_queries(rng, [make_record(rng, n) for n in range(200)], opts["queries"])
        times: dict[str, list[float]] = {m: [] for m in models}
        for embedder in embedders.values():
            for q in queries[:5]:
                embedder.embed_one(q)  # warm
        for q in queries:
            for model, embedder in embedders.items():
                started = time.perf_counter()
                embedder.embed_one(q)
                times[model].append((time.perf_counter() - started) * 1000)
        indexing = {}
        for model, embedder in embedders.items():
            if not opts["records"]:
                break
            with scratch_database():
                populate_corpus(opts["records"], random.Random(opts["seed"]), embedder, embed=False)
                wall, cpu = time.perf_counter(), time.process_time()
                index.sync(embedder, batch=256)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            indexing[model] = (opts["records"] / wall, opts["records"] / max(cpu, 1e-9))
        load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
        first = models[0]
        self.stdout.write(f"{opts['embedder']}, {len(queries)} single queries, load (1/5/15 min) after: {load}")
        self.stdout.write("| model | dims | query p50 ms | p95 ms | p50 ratio | index records/s (wall) | (CPU) |")
        self.stdout.write("|---|---|---|---|---|---|---|")
        for model, embedder in embedders.items():
            p50 = statistics.median(times[model])
            ratio = p50 / statistics.median(times[first])
            rate = indexing.get(model)
            rates = f"{rate[0]:.1f} | {rate[1]:.1f}" if rate else "- | -"
            self.stdout.write(
                f"| {embedder.name} | {embedder.dimension} | {p50:.1f} | {_p95(times[model]):.1f} | "
                f"{ratio:.2f} | {rates} |"
            )
