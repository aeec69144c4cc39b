"""Benchmark the stdio bridge's cold start: the daemon is down, the bridge
is spawned the way Claude Code or Codex spawns it (autostart on), and we time,
from the spawn, the answers to initialize, tools/list and the first
tools/call (describe). Each run stops the daemon afterwards (its pid from
VETTED_HOME/serve.json). Rows: with the bridge's answer cache in place (every
start after the first) and without it (the very first start in a VETTED_HOME).
Real model unless VETTED_EMBEDDER says otherwise; prints medians."""

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from common import listening
from devtools.scratch import scratch_database, scratch_reviewer
from mcp_bridge.daemon_process import free_port
from mcp_bridge.handshake import opening
from reviews import actions

PROJECT = Path(settings.BASE_DIR)
STEPS = ("initialize", "tools/list", "tools/call describe")


def _messages() -> list[dict]:
    return [
        *opening(),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "describe", "arguments": {}}},
    ]


class Command(BaseCommand):
    help = (
        "Benchmark the stdio bridge's cold start with the daemon down: time from spawn to the initialize, "
        "tools/list and first tools/call answers, with and without the bridge's cache. Prints medians."
    )

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=3, help="cold starts per row (default 3)")

    def handle(self, *args, **opts):
        if opts["runs"] < 1:
            raise CommandError("--runs must be at least 1.")
        with scratch_database() as folder:
            _agent, token = actions.create_agent("bench", spaces=["personal", "team"], actor=scratch_reviewer())
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": os.environ.get("HOME", "/tmp"),
                "VETTED_HOME": str(folder),
                "VETTED_DB_PATH": str(folder / "scratch.sqlite3"),
                "VETTED_TOKEN": token,
                "VETTED_AUTOSTART": "1",
                "VETTED_CONFIG": str(folder / "no-bridge-config.json"),
                "VETTED_MCP_INITIALIZE_PER_MINUTE": "0",
            }
            Path(env["VETTED_CONFIG"]).write_text("{}")
            if os.environ.get("VETTED_EMBEDDER"):
                env["VETTED_EMBEDDER"] = os.environ["VETTED_EMBEDDER"]
            self.stderr.write("warm-up start (the first start in a home exports the model to ONNX)...")
            self._cold_start(env, folder)
            rows: dict[str, list[list[float]]] = {"daemon down, cache": [], "daemon down, no cache": []}
            for _ in range(opts["runs"]):
                for row, cache in (("daemon down, no cache", False), ("daemon down, cache", True)):
                    if not cache:
                        (folder / "bridge-cache.json").unlink(missing_ok=True)
                    rows[row].append(self._cold_start(env, folder))
        self.stdout.write("")
        self.stdout.write(
            f"stdio bridge cold start, medians of {opts['runs']} runs (ms from spawn); "
            f"model {os.environ.get('VETTED_EMBEDDER') or 'default'}; cpu count {os.cpu_count()}"
        )
        self.stdout.write(f"{'condition':<24}" + "".join(f"{step:>22}" for step in STEPS))
        for row, runs in rows.items():
            medians = [statistics.median(run[i] for run in runs) for i in range(len(STEPS))]
            self.stdout.write(f"{row:<24}" + "".join(f"{m:>22.0f}" for m in medians))

    def _cold_start(self, env: dict, folder: Path) -> list[float]:
        port = free_port()
        run_env = {**env, "VETTED_URL": f"http://127.0.0.1:{port}"}
        messages = _messages()
        t0 = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, str(PROJECT / "manage.py"), "mcp_stdio"],
            env=run_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin is not None and process.stdout is not None  # PIPE
        timings = []
        try:
            for message in messages:
                process.stdin.write(json.dumps(message).encode() + b"\n")
                process.stdin.flush()
                if "id" not in message:
                    continue
                reply = json.loads(process.stdout.readline() or b"null")
                if not isinstance(reply, dict) or "result" not in reply:
                    raise CommandError(f"{message['method']} failed: {reply}")
                timings.append((time.perf_counter() - t0) * 1000)
        finally:
            process.stdin.close()
            process.wait(timeout=30)
            self._stop_daemon(folder)
        return timings

    def _stop_daemon(self, folder: Path) -> None:
        deadline = time.monotonic() + 30
        record = None
        while record is None and time.monotonic() < deadline:
            record = listening.running(folder)
            time.sleep(0.05)
        if record is None:
            raise CommandError(f"No running daemon recorded in {folder}/serve.json after the bridge started one.")
        os.kill(record.pid, signal.SIGTERM)
        while listening.pid_alive(record.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
