"""Two checkouts side by side in one run: this tree (A) and a given commit
(B, checked out with `git worktree add` into a temporary folder, removed
afterwards). Each is set up through its own manage.py and served by its own
daemon; the same synthetic corpus goes into both, and the same queries go to
both, interleaved (A then B, then B then A, ...), over MCP (streamable HTTP)
and REST, so a load that comes and goes falls on both alike."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devtools.bench_clients import McpSearcher, SearchFailed, rest_search, summary
from devtools.bench_sides import Side, SideFailed, git
from devtools.synthetic import make_queries, make_record
from mcp_bridge.daemon_process import DaemonFailed

PROJECT = Path(settings.BASE_DIR)
EMBEDDERS = ["fake", "onnx", "torch", "sentence-transformers"]
INTERFACES = ("MCP", "REST")


def write_corpus(path: Path, records: int, rng: random.Random) -> list[dict]:
    """The synthetic corpus as JSON Lines for `import_records`, and beside it
    (``older_corpus(path)``) the same under the key older checkouts read
    for a record's space (``scope``)."""
    specs = [make_record(rng, n) for n in range(records)]
    with open(path, "w") as out, open(older_corpus(path), "w") as older:
        for spec in specs:
            row = {k: spec[k] for k in ("kind", "space", "title", "body", "tags")}
            row["review_by"] = spec["review_by"].isoformat()
            out.write(json.dumps(row) + "\n")
            row["scope"] = row.pop("space")
            older.write(json.dumps(row) + "\n")
    return specs


def older_corpus(path: Path) -> Path:
    return path.with_name(f"{path.stem}-scope{path.suffix}")


async def interleave(sides: list[Side], queries: list[str], warm: int = 3) -> dict:
    """{interface: {label: {"ms": [...], "hits": [...]}}}, the same query to each side in turn."""
    out: dict = {i: {s.label: {"ms": [], "hits": []} for s in sides} for i in INTERFACES}
    async with McpSearcher(sides[0].base, sides[0].token) as mcp_a, McpSearcher(sides[1].base, sides[1].token) as mcp_b:
        clients = {sides[0].label: mcp_a, sides[1].label: mcp_b}
        for q in queries[:warm]:  # first searches load caches; not counted
            for side in sides:
                await clients[side.label].search(q)
                rest_search(side.base, side.token, q)
        for n, q in enumerate(queries):
            order = sides if n % 2 == 0 else sides[::-1]
            for side in order:
                ms, hits = await clients[side.label].search(q)
                out["MCP"][side.label]["ms"].append(ms)
                out["MCP"][side.label]["hits"].append(hits)
            for side in order:
                ms, hits = rest_search(side.base, side.token, q)
                out["REST"][side.label]["ms"].append(ms)
                out["REST"][side.label]["hits"].append(hits)
    return out


class Command(BaseCommand):
    help = (
        "Benchmark this tree against another commit in one run: each checkout's own daemon over the same "
        "synthetic corpus, the same queries interleaved over MCP and REST; prints both p50/p95 tables and "
        "the ratio B/A."
    )

    def add_arguments(self, parser):
        parser.add_argument("commit", nargs="?", default="51a1491", help="the commit to compare with (B)")
        parser.add_argument("--records", type=int, default=500, help="corpus size (10000 is the documented target)")
        parser.add_argument("--searches", type=int, default=100, help="timed searches per side and interface")
        parser.add_argument(
            "--embedder",
            choices=EMBEDDERS,
            default=os.environ.get("VETTED_EMBEDDER") or None,
            help="VETTED_EMBEDDER for both sides (default: each checkout's own default, the real model); "
            "fake: deterministic vectors for a quick run",
        )
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line at the end")

    def handle(self, *args, **opts):
        if opts["records"] < 10 or opts["searches"] < 2:
            raise CommandError("--records must be at least 10 and --searches at least 2.")
        try:
            sha = git(PROJECT, "rev-parse", "--verify", f"{opts['commit']}^{{commit}}")
        except SideFailed as exc:
            raise CommandError(f"{opts['commit']!r} is not a commit of {PROJECT}: {exc}") from None
        load_start = os.getloadavg()
        folder = Path(tempfile.mkdtemp(prefix="vetted-compare-"))
        worktree = folder / "checkout-b"
        cache = Path(settings.VETTED_HOME) / "onnx"
        sides = [
            Side("A this tree", PROJECT, folder / "home-a", opts["embedder"], cache),
            Side(f"B {sha[:7]}", worktree, folder / "home-b", opts["embedder"], cache),
        ]
        try:
            git(PROJECT, "worktree", "add", "--detach", str(worktree), sha)
            rng = random.Random(opts["seed"])
            corpus = folder / "corpus.jsonl"
            specs = write_corpus(corpus, opts["records"], rng)
            queries = make_queries(rng, specs, opts["searches"])
            # Generous: 10,000 records took minutes to embed on a busy machine.
            index_timeout = 300 + opts["records"] * 0.2
            for side in sides:
                self.stderr.write(f"{side.label}: building {opts['records']} records ...")
                side.build(corpus, older_corpus(corpus))
                side.start(index_timeout)
            results = asyncio.run(interleave(sides, queries))
        except (SideFailed, DaemonFailed, SearchFailed) as exc:
            raise CommandError(str(exc)) from None
        finally:
            for side in sides:
                side.stop()
            if worktree.exists():
                try:
                    git(PROJECT, "worktree", "remove", "--force", str(worktree))
                except SideFailed as exc:
                    self.stderr.write(f"could not remove the worktree: {exc}")
            shutil.rmtree(folder, ignore_errors=True)
        load_end = os.getloadavg()
        self._report(opts, sha, sides, results, load_start, load_end)

    def _report(self, opts, sha, sides, results, load_start, load_end):
        w = self.stdout.write
        embedder = opts["embedder"] or "each checkout's default"
        w("")
        w(
            f"A = this tree ({PROJECT}), B = {sha[:12]}; {opts['records']} records, {opts['searches']} hybrid "
            f"searches (limit 8) per side and interface, interleaved; embedder: {embedder}; cpu count {os.cpu_count()}"
        )
        w(f"load average at start {_load(load_start)}, at end {_load(load_end)}")
        for side in sides:
            w(f"{side.label}: " + ", ".join(f"{k} {v:.1f}" for k, v in side.timings.items()))
        w("")
        w(f"{'interface':<10} {'side':<16} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'with hits':>10}")
        figures: dict = {"commit": sha, "records": opts["records"], "load": [load_start, load_end], "rows": []}
        for interface in INTERFACES:
            rows = []
            for side in sides:
                data = results[interface][side.label]
                row = {"interface": interface, "side": side.label, **summary(data["ms"])}
                row["with_hits"] = sum(1 for h in data["hits"] if h)
                rows.append(row)
                figures["rows"].append(row)
                w(
                    f"{interface:<10} {side.label:<16} {row['n']:>5} {row['p50']:>8.1f} {row['p95']:>8.1f} "
                    f"{row['max']:>8.1f} {row['with_hits']:>10}"
                )
            a, b = rows
            ratio = {"p50": b["p50"] / a["p50"], "p95": b["p95"] / a["p95"]}
            figures[f"ratio_{interface}"] = ratio
            w(f"{interface:<10} {'ratio B/A':<16} {'':>5} {ratio['p50']:>8.2f} {ratio['p95']:>8.2f}")
        if opts["json"]:
            w(json.dumps(figures))


def _load(avg: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.2f}" for x in avg) + " (1/5/15 min)"
