"""Benchmark notifications on a scratch database (never the real one):

1. commit to arrival: a real daemon (`serve`, its sender thread) with the
   webhook pointed at a receiver in this process; N proposals one after
   another, each sent by an agent over REST (as agents do) and timed from
   the API's answer (just after the commit) to the webhook request naming it
   (VETTED_NOTIFY_MIN_SECONDS=0, so the spacing between messages is not
   measured; once with the default quiet window, once with none);
2. the live inbox's poll per open tab: queries and server time of
   GET /inbox/live through Django's whole stack (session, auth, template),
   when nothing is new (the common case) and when something is.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from devtools.scratch import scratch_database, scratch_reviewer
from mcp_bridge.daemon_process import DaemonFailed, free_port, wait_for_health
from notify import live
from reviews import actions

PROJECT = Path(settings.BASE_DIR)


def _row(label: str, values: list[float], unit: str = "ms") -> str:
    values = sorted(values)
    p90 = values[max(0, int(len(values) * 0.9) - 1)]
    return f"{label:<44} {len(values):>5} {statistics.median(values):>9.1f} {p90:>9.1f} {values[-1]:>9.1f} {unit}"


class _Arrivals:
    """A webhook receiver: when each proposal id first arrived (monotonic)."""

    def __init__(self):
        self.seen: dict[str, float] = {}
        self.event = threading.Condition()
        arrivals = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                now = time.monotonic()
                with arrivals.event:
                    for item in json.loads(body).get("items", []):
                        arrivals.seen.setdefault(item["id"], now)
                    arrivals.event.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, public_id: str, timeout: float = 30.0) -> float:
        with self.event:
            if not self.event.wait_for(lambda: public_id in self.seen, timeout=timeout):
                raise CommandError(f"{public_id} never reached the webhook")
            return self.seen[public_id]


class Command(BaseCommand):
    help = (
        "Time a proposal's commit to its webhook's arrival through the real daemon (median over N), "
        "and the live inbox poll's queries and server time per open tab. Scratch database; prints a table."
    )

    def add_arguments(self, parser):
        parser.add_argument("--proposals", type=int, default=50, help="proposals timed per run (default 50)")
        parser.add_argument("--polls", type=int, default=200, help="live polls timed (default 200)")

    def handle(self, *args, **opts):
        n, polls = opts["proposals"], opts["polls"]
        if n < 5 or polls < 10:
            raise CommandError("--proposals must be at least 5 and --polls at least 10.")
        with scratch_database() as folder:
            reviewer = scratch_reviewer()
            _agent, token = actions.create_agent("bench", spaces=["team"], actor=reviewer)
            arrivals = _Arrivals()
            runs: dict[float, list[float]] = {}
            try:
                for quiet in (settings.VETTED_NOTIFY_QUIET_SECONDS, 0.0):
                    runs[quiet] = self._latencies(folder, arrivals, token, n, quiet, start=len(runs) * n)
            finally:
                arrivals.server.shutdown()
            with override_settings(ALLOWED_HOSTS=["testserver"]):
                poll_rows = self._polls(reviewer, polls)

        self.stdout.write("")
        self.stdout.write(f"commit -> webhook arrival, {n} proposals one at a time, real daemon; cpu {os.cpu_count()}")
        self.stdout.write(f"{'run':<44} {'n':>5} {'median':>9} {'p90':>9} {'max':>9}")
        for quiet, values in runs.items():
            self.stdout.write(_row(f"VETTED_NOTIFY_QUIET_SECONDS={quiet:g}", values))
        self.stdout.write("")
        self.stdout.write(f"live inbox poll per open tab (GET /inbox/live, every {live.POLL_SECONDS} s), {polls} polls")
        self.stdout.write(f"{'case':<44} {'n':>5} {'median':>9} {'p90':>9} {'max':>9}")
        for label, ms, queries in poll_rows:
            self.stdout.write(_row(label, ms))
            self.stdout.write(_row("  queries", [float(q) for q in queries], "queries"))

    def _latencies(
        self, folder: Path, arrivals: _Arrivals, token: str, n: int, quiet: float, start: int
    ) -> list[float]:
        port = free_port()
        env = {
            **os.environ,
            "VETTED_HOME": str(folder),
            "VETTED_DB_PATH": str(folder / "scratch.sqlite3"),
            "DJANGO_SETTINGS_MODULE": "memory_site.settings",
            "VETTED_EMBEDDER": os.environ.get("VETTED_EMBEDDER", "fake"),
            "VETTED_WEBHOOK_URL": arrivals.url,
            "VETTED_WEBHOOK_FORMAT": "json",
            "VETTED_NOTIFY_MIN_SECONDS": "0",
            "VETTED_NOTIFY_QUIET_SECONDS": str(quiet),
            "VETTED_PROPOSALS_PER_MINUTE": "0",
        }
        log_path = folder / f"serve-{port}.log"
        with open(log_path, "wb") as log:
            daemon = subprocess.Popen(
                [sys.executable, str(PROJECT / "manage.py"), "serve", "--port", str(port)],
                cwd=PROJECT,
                env=env,
                stdout=log,
                stderr=log,
            )
        try:
            try:
                wait_for_health(f"http://127.0.0.1:{port}", daemon, log_path=log_path)
            except DaemonFailed as exc:
                raise CommandError(str(exc)) from None
            timings = []
            for i in range(start, start + n):
                body = {
                    "reason": "Benchmark of notifications",
                    "kind": "fact",
                    "space": "team",
                    "title": f"Benchmark proposal {i}",
                    "body": f"Proposal {i}: the nightly job number {i} for the billing service runs at two.",
                    "tags": ["bench"],
                    "confirm_duplicate": True,  # the bench's texts are alike on purpose
                }
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/api/v1/proposals",
                    data=json.dumps(body).encode(),
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                    method="POST",
                )
                with urllib.request.urlopen(request, timeout=30) as response:
                    made = json.loads(response.read())
                # The answer comes after the commit, so this overstates the time a little.
                committed = time.monotonic()
                timings.append(max(0.0, arrivals.wait_for(made["proposal_id"]) - committed) * 1000)
            return timings
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)

    def _polls(self, reviewer, polls: int):
        client = Client()
        client.force_login(reviewer)
        newest = live.newest_pending()
        rows = []
        for label, since, clear in (
            ("nothing new (cache warm)", newest, False),
            ("something new (cache warm)", 0, False),
            ("cache cold (first tab in 2 s)", newest, True),
        ):
            client.get(f"/inbox/live?since={since}")
            ms, queries = [], []
            for _ in range(polls):
                if clear:
                    cache.clear()
                with CaptureQueriesContext(connection) as captured:
                    t0 = time.perf_counter()
                    response = client.get(f"/inbox/live?since={since}")
                    ms.append((time.perf_counter() - t0) * 1000)
                if response.status_code != 200:
                    raise CommandError(f"GET /inbox/live answered {response.status_code}")
                queries.append(len(captured))
            rows.append((label, ms, queries))
        return rows
