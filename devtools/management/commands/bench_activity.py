"""Benchmark the activity page and the strip above the inbox: server time
with many decisions.

Seeds a temporary database (never the real one) with agents, approved
records and N decided proposals spread over the last 90 days (plus a
backlog of pending ones), then renders the activity page and the inbox
through Django's full request stack and prints a table: median / p95 / max
server time and the query count per page.

The decided proposals are written in bulk, not through the actions: the
page reads only the proposal and record rows and their dates, and 10,000
decisions through the actions (each its own transaction, audit event and
index queue) would take minutes to seed without changing what is measured.
"""

from __future__ import annotations

import random
import statistics
import time
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from devtools.scratch import scratch_database, scratch_reviewer
from reviews import actions
from reviews.models import Proposal, ProposalAction, ProposalState, Record, RecordStatus

AGENTS = ["claude-code", "cursor", "codex", "team-bot", "nightly-import", "support-bot", "docs-bot"]


class Command(BaseCommand):
    help = "Seed N decisions in a temporary database and time the activity page and the inbox strip."

    def add_arguments(self, parser):
        parser.add_argument("--decisions", type=int, default=10_000, help="decided proposals to seed (default 10000)")
        parser.add_argument("--pending", type=int, default=300, help="pending proposals to seed (default 300)")
        parser.add_argument("--records", type=int, default=2_000, help="approved records to seed (default 2000)")
        parser.add_argument("--renders", type=int, default=30, help="renders per page measured (default 30)")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, **opts):
        if opts["decisions"] < 1 or opts["renders"] < 1 or opts["pending"] < 0 or opts["records"] < 0:
            raise CommandError("--decisions and --renders must be at least 1; --pending and --records at least 0")
        rng = random.Random(opts["seed"])
        with scratch_database():
            started = time.perf_counter()
            self._seed(rng, opts["decisions"], opts["pending"], opts["records"])
            seeded_in = time.perf_counter() - started
            client = Client(SERVER_NAME="localhost")
            client.force_login(scratch_reviewer())
            pages = [("activity page", reverse("activity")), ("inbox (with the strip)", reverse("home"))]
            rows = [self._measure(client, label, url, opts["renders"]) for label, url in pages]
        self.stdout.write(
            f"seeded {opts['decisions']} decisions, {opts['pending']} pending proposals and {opts['records']} "
            f"records in a temporary database in {seeded_in:.1f} s; {opts['renders']} renders per page "
            f"(first render discarded)"
        )
        self.stdout.write(
            f"{'page':<24} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'cpu med':>8} {'cpu p95':>8} "
            f"{'queries':>8} {'KB':>6}"
        )
        for r in rows:
            self.stdout.write(
                f"{r['label']:<24} {r['median']:>10.1f} {r['p95']:>8.1f} {r['max']:>8.1f} {r['cpu_median']:>8.1f} "
                f"{r['cpu_p95']:>8.1f} {r['queries']:>8} {r['kb']:>6.0f}"
            )

    def _seed(self, rng: random.Random, decisions: int, pending: int, records: int) -> None:
        reviewer = scratch_reviewer()
        agents = [actions.create_agent(name, spaces=["team"], actor=reviewer)[0] for name in AGENTS]
        now = timezone.now()
        today = timezone.localdate()
        Record.objects.bulk_create(
            [
                Record(
                    kind="fact",
                    space="team",
                    title=f"Seeded record {n}",
                    body=f"Seeded record {n} for the activity benchmark.",
                    status=RecordStatus.APPROVED,
                    review_by=today + timedelta(days=rng.randint(-20, 120)),
                    approved_checksum="0" * 64,  # the page reads no checksum
                    approved_at=now,
                    approved_by=reviewer,
                )
                for n in range(records)
            ],
            batch_size=1000,
        )
        rows = []
        for n in range(decisions + pending):
            created = now - timedelta(days=rng.uniform(0, 90))
            decided = n < decisions
            took = timedelta(hours=rng.expovariate(1 / 20))
            state = (
                rng.choices(
                    [ProposalState.ACCEPTED, ProposalState.REJECTED, ProposalState.WITHDRAWN], weights=[70, 25, 5]
                )[0]
                if decided
                else ProposalState.PENDING
            )
            rows.append(
                Proposal(
                    action=ProposalAction.CREATE,
                    state=state,
                    kind="fact",
                    space="team",
                    title=f"Seeded proposal {n}",
                    body=f"Seeded proposal {n} for the activity benchmark.",
                    reason="Benchmark seed",
                    agent=rng.choice(agents),
                    created_at=created,
                    decided_at=min(created + took, now) if decided else None,
                    decided_by=reviewer if decided else None,
                )
            )
        Proposal.objects.bulk_create(rows, batch_size=1000)

    def _measure(self, client, label, url, renders) -> dict:
        queries = []

        def count(execute, sql, params, many, context):
            queries.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            response = client.get(url)
        if response.status_code != 200:
            raise CommandError(f"{url} answered {response.status_code}")
        times, cpu = [], []
        for _ in range(renders):
            # CPU time of this thread (SQLite runs in it): what the page costs when the
            # machine is shared; wall time also holds waiting for a core.
            started, started_cpu = time.perf_counter(), time.thread_time()
            client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - started_cpu) * 1000)
        times.sort()
        cpu.sort()
        return {
            "label": label,
            "median": statistics.median(times),
            "p95": times[min(len(times) - 1, int(len(times) * 0.95))],
            "max": times[-1],
            "cpu_median": statistics.median(cpu),
            "cpu_p95": cpu[min(len(cpu) - 1, int(len(cpu) * 0.95))],
            "queries": len(queries),
            "kb": len(response.content) / 1024,
        }
