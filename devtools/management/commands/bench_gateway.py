"""Benchmark the agent gateway end to end: a real daemon (`serve`, real
model unless VETTED_EMBEDDER says otherwise) over a synthetic corpus in a
temporary folder; warm search latency through MCP (the official client over
streamable HTTP, one session), through REST, and in-process for reference;
and the stdio bridge's time from spawn to its first tool answer."""

import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from devtools.bench_clients import McpSearcher, SearchFailed, rest_search
from devtools.scratch import scratch_database, scratch_reviewer
from devtools.synthetic import make_queries, populate_corpus
from mcp_bridge.daemon_process import DaemonFailed, free_port, start_serve, wait_for_health
from mcp_bridge.handshake import opening
from retrieval import search as engine
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from reviews import actions

PROJECT = Path(settings.BASE_DIR)


def _summary(label: str, timings: list[float]) -> dict:
    timings = sorted(timings)
    return {
        "path": label,
        "n": len(timings),
        "p50": statistics.median(timings),
        "p95": timings[max(0, int(len(timings) * 0.95) - 1)],
        "max": timings[-1],
    }


class Command(BaseCommand):
    help = (
        "Benchmark the gateway: warm search p50/p95 over MCP (HTTP), REST and in-process on a synthetic "
        "corpus, and the stdio bridge's spawn-to-first-answer time. Prints a table."
    )

    def add_arguments(self, parser):
        parser.add_argument("--records", type=int, default=10000)
        parser.add_argument("--searches", type=int, default=200)
        parser.add_argument("--spawns", type=int, default=20, help="bridge processes to spawn and time")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--compare",
            metavar="COMMIT",
            help="instead: this tree against COMMIT side by side, each through its own daemon (bench_compare)",
        )

    def handle(self, *args, **opts):
        if opts["compare"]:
            return call_command(
                "bench_compare",
                opts["compare"],
                records=opts["records"],
                searches=opts["searches"],
                seed=opts["seed"],
                stdout=self.stdout,
                stderr=self.stderr,
            )
        if opts["records"] < 10 or opts["searches"] < 10 or opts["spawns"] < 1:
            raise CommandError("--records and --searches must be at least 10, --spawns at least 1.")
        embedder = get_embedder()
        rng = random.Random(opts["seed"])
        with scratch_database() as folder:
            specs, _insert_s, build_s = populate_corpus(opts["records"], rng, embedder)
            self.stderr.write(f"corpus of {opts['records']} built in {build_s:.0f} s")
            reviewer = scratch_reviewer()
            _agent, token = actions.create_agent("bench", spaces=["personal", "team", "system"], actor=reviewer)
            queries = make_queries(rng, specs, opts["searches"])

            reader = Reader.everything()
            engine.search(queries[0], reader=reader, embedder=embedder, count_access=False)
            in_process = []
            for q in queries:
                t0 = time.perf_counter()
                engine.search(q, limit=8, reader=reader, embedder=embedder, count_access=False)
                in_process.append((time.perf_counter() - t0) * 1000)

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
                try:
                    wait_for_health(base, daemon, log_path=folder / "serve.log")
                except DaemonFailed as exc:
                    raise CommandError(str(exc)) from None
                try:
                    mcp = asyncio.run(self._mcp_searches(base, token, queries))
                except SearchFailed as exc:
                    raise CommandError(str(exc)) from None
                rest = self._rest_searches(base, token, queries)
                bridge = self._bridge_spawns(base, token, opts["spawns"], queries[0])
            finally:
                daemon.terminate()
                daemon.wait(timeout=30)

        rows = [
            _summary("in-process search()", in_process),
            _summary("MCP streamable HTTP", mcp),
            _summary("REST GET /api/v1/search", rest),
        ]
        self.stdout.write("")
        self.stdout.write(
            f"{opts['records']} records, model {embedder.name}, {opts['searches']} hybrid searches "
            f"(limit 8) per path, warm daemon; cpu count {os.cpu_count()}"
        )
        self.stdout.write(f"{'path':<28} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        for row in rows:
            self.stdout.write(
                f"{row['path']:<28} {row['n']:>5} {row['p50']:>8.1f} {row['p95']:>8.1f} {row['max']:>8.1f}"
            )
        self.stdout.write("")
        self.stdout.write(f"stdio bridge, spawn -> first tool answer ({opts['spawns']} spawns)")
        self.stdout.write(f"{'first call':<28} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        for label, timings in bridge.items():
            row = _summary(label, timings)
            self.stdout.write(f"{label:<28} {row['n']:>5} {row['p50']:>8.1f} {row['p95']:>8.1f} {row['max']:>8.1f}")
        ratio = statistics.median(mcp) / statistics.median(in_process)
        self.stdout.write(f"\nMCP/in-process median ratio: {ratio:.2f}")

    async def _mcp_searches(self, base, token, queries):
        async with McpSearcher(base, token) as mcp:
            await mcp.search(queries[0])  # warm
            return [(await mcp.search(q))[0] for q in queries]

    def _rest_searches(self, base, token, queries):
        rest_search(base, token, queries[0])  # warm
        return [rest_search(base, token, q)[0] for q in queries]

    def _bridge_spawns(self, base, token, spawns, query):
        """Spawn the bridge like a client does and time the first answer
        (initialize, initialized, then one tools/call) from the spawn."""
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "VETTED_URL": base,
            "VETTED_TOKEN": token,
            "VETTED_AUTOSTART": "0",
        }
        calls = {"describe": {}, "search": {"query": query}}
        results: dict[str, list[float]] = {f"{name} (spawn to answer)": [] for name in calls}
        for _ in range(spawns):
            for name, arguments in calls.items():
                messages = [
                    *opening(),
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": name, "arguments": arguments},
                    },
                ]
                t0 = time.perf_counter()
                process = subprocess.Popen(
                    [sys.executable, str(PROJECT / "manage.py"), "mcp_stdio"],
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                assert process.stdin is not None and process.stdout is not None  # PIPE
                process.stdin.write(json.dumps(messages[0]).encode() + b"\n")
                process.stdin.flush()
                process.stdout.readline()  # the initialize result
                for message in messages[1:]:
                    process.stdin.write(json.dumps(message).encode() + b"\n")
                process.stdin.flush()
                answer = json.loads(process.stdout.readline())
                elapsed = (time.perf_counter() - t0) * 1000
                process.stdin.close()
                process.wait(timeout=10)
                if "result" not in answer or answer["result"].get("isError"):
                    raise CommandError(f"bridge {name} failed: {answer}")
                results[f"{name} (spawn to answer)"].append(elapsed)
        return results
