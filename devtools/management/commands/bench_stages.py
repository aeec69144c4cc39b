"""Per-stage breakdown of a hybrid search on a synthetic corpus in a
temporary folder: medians of each stage in process (query embedding, the
keyword and vector pools, statistics, fusion, the gate, serialisation), then
the same queries over the wire to a daemon on the same data, whose medians
minus the in-process one are the MCP and HTTP layers."""

from __future__ import annotations

import asyncio
import cProfile
import io
import json
import os
import pstats
import random
import statistics
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test import override_settings

from devtools.bench_clients import McpSearcher, SearchFailed, rest_search
from devtools.bench_stages import TOTAL, breakdown, table
from devtools.scratch import scratch_database, scratch_reviewer
from devtools.synthetic import make_queries, make_record, populate_corpus
from mcp_bridge.daemon_process import DaemonFailed, free_port, start_serve, wait_for_health
from retrieval.embeddings import get_embedder
from reviews import actions
from reviews.models import Record

PROJECT = Path(settings.BASE_DIR)


async def _mcp(base: str, token: str, queries: list[str]) -> list[float]:
    async with McpSearcher(base, token) as mcp:
        await mcp.search(queries[0])  # warm
        return [(await mcp.search(q))[0] for q in queries]


class Command(BaseCommand):
    help = (
        "Where a search's milliseconds go: per-stage medians in process (embedding, keyword and vector pools, "
        "statistics, fusion, gate, serialisation) and the MCP/HTTP layers measured against a daemon."
    )

    def add_arguments(self, parser):
        parser.add_argument("--records", type=int, default=1000)
        parser.add_argument("--searches", type=int, default=100)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--no-wire", action="store_true", help="in process only: start no daemon")
        parser.add_argument(
            "--corpus",
            type=Path,
            help="keep the corpus in this folder and reuse it on the next run with the same --records, --seed "
            "and model (SQLite only; building 10,000 records with the real model takes minutes)",
        )
        parser.add_argument(
            "--profile", type=Path, help="also run the searches under cProfile: stats to this file, top 25 printed"
        )

    def handle(self, *args, **opts):
        if opts["records"] < 10 or opts["searches"] < 2:
            raise CommandError("--records must be at least 10 and --searches at least 2.")
        embedder = get_embedder()
        rng = random.Random(opts["seed"])
        load_start = os.getloadavg()
        with scratch_database(folder=opts["corpus"]) as folder:
            specs = self._corpus(folder, opts, rng, embedder, kept=opts["corpus"] is not None)
            agent, token = actions.create_agent(
                f"bench-{os.getpid()}", spaces=["personal", "team", "system"], actor=scratch_reviewer()
            )
            queries = make_queries(rng, specs, opts["searches"])
            # As on the daemon below: a benchmark's burst would trip the read limit.
            with override_settings(VETTED_READS_PER_MINUTE=0):
                breakdown(agent, queries[:3])  # warm: the caches, the model's first call
                per_stage = breakdown(agent, queries)
                if opts["profile"]:
                    self._profile(agent, queries, opts["profile"])
            wire = {} if opts["no_wire"] else self._wire(folder, token, queries)
        load_end = os.getloadavg()

        w = self.stdout.write
        w("")
        w(
            f"{opts['records']} records, model {embedder.name}, {opts['searches']} hybrid searches (limit 8) "
            f"through the agent API; cpu count {os.cpu_count()}; load average at start "
            f"{load_start[0]:.2f}, at end {load_end[0]:.2f}"
        )
        for line in table(per_stage):
            w(line)
        if wire:
            inside = statistics.median(per_stage[TOTAL])
            w("")
            w(f"{'over the wire':<36} {'p50 ms':>8} {'layer ms':>8}")
            for name, timings in wire.items():
                p50 = statistics.median(timings)
                w(f"{name:<36} {p50:>8.2f} {p50 - inside:>8.2f}")
            w("(layer = the wire median minus the in-process total median: transport, auth, the server's framework)")

    def _corpus(self, folder: Path, opts, rng: random.Random, embedder, *, kept: bool) -> list[dict]:
        """The corpus's specs: built now, or (a kept folder built with the same
        size, seed and model) regenerated from the seed without touching the database."""
        wanted = {"records": opts["records"], "seed": opts["seed"], "model": embedder.name}
        marker = folder / "bench-corpus.json"
        if kept and marker.exists():
            found = json.loads(marker.read_text())
            if found != wanted:
                raise CommandError(
                    f"{folder} holds a corpus of {found}, not {wanted}: "
                    "name another --corpus folder or remove this one."
                )
            self.stderr.write(f"reusing the corpus of {opts['records']} in {folder}")
            return [make_record(rng, n) for n in range(opts["records"])]
        if kept and Record.objects.exists():
            raise CommandError(f"{folder} holds an unfinished corpus (a build was interrupted): remove the folder.")
        specs, _insert_s, build_s = populate_corpus(opts["records"], rng, embedder)
        self.stderr.write(f"corpus of {opts['records']} built in {build_s:.0f} s")
        if kept:
            marker.write_text(json.dumps(wanted))
        return specs

    def _profile(self, agent, queries: list[str], path: Path) -> None:
        profiler = cProfile.Profile()
        profiler.enable()
        breakdown(agent, queries)
        profiler.disable()
        profiler.dump_stats(str(path))
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        self.stderr.write(out.getvalue())

    def _wire(self, folder: Path, token: str, queries: list[str]) -> dict[str, list[float]]:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "VETTED_HOME": str(folder),
            "VETTED_DB_PATH": str(folder / "scratch.sqlite3"),
            "VETTED_PROPOSALS_PER_MINUTE": "0",
            "VETTED_READS_PER_MINUTE": "0",
            "VETTED_MCP_INITIALIZE_PER_MINUTE": "0",
            "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        }
        daemon = start_serve(PROJECT, env, port, folder / "serve.log")
        try:
            wait_for_health(base, daemon, log_path=folder / "serve.log")
            mcp = asyncio.run(_mcp(base, token, queries))
            rest_search(base, token, queries[0])  # warm
            rest = [rest_search(base, token, q)[0] for q in queries]
        except (DaemonFailed, SearchFailed) as exc:
            raise CommandError(str(exc)) from None
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
        return {"MCP streamable HTTP": mcp, "REST GET /api/v1/search": rest}
