"""Benchmark the inbox page: server time with many pending proposals.

Seeds a temporary database (never the real one) with approved records and
pending proposals of every kind through the real actions, then renders the
inbox through Django's full request stack (middleware, auth, templates) and
prints median / p95 / max server time and the query count per page.

--hostile first seeds one page of worst-case revise proposals: a record of
about 1 000 characters revised into a maximum-size body made of the same few
words in another order (what made the word diff quadratic), then times one
such card and the inbox page made of them.
"""

from __future__ import annotations

import random
import re
import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse

from devtools.scratch import scratch_database, scratch_reviewer
from devtools.synthetic import make_record
from reviews import actions
from reviews.models import Proposal, ProposalState
from reviews.validation import BODY_MAX

HOSTILE_PAGE = 25  # one inbox page of them


class Command(BaseCommand):
    help = (
        "Seed N pending proposals in a temporary database and time the inbox page "
        "(median/p95 server time over R renders, and queries per page)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--proposals", type=int, default=500, help="pending proposals to seed (default 500)")
        parser.add_argument("--renders", type=int, default=50, help="renders per page measured (default 50)")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--similar",
            action="store_true",
            help="also time the lazy 'similar records' request of create cards (loads the embedding model)",
        )
        parser.add_argument(
            "--hostile",
            action="store_true",
            help=f"first seed {HOSTILE_PAGE} worst-case revisions (a ~1000-character record revised into "
            f"{BODY_MAX} characters of the same words reordered) and time one such card",
        )

    def handle(self, *args, **opts):
        total, renders = opts["proposals"], opts["renders"]
        if total < 10 or renders < 1:
            raise CommandError("--proposals must be at least 10 and --renders at least 1")
        rng = random.Random(opts["seed"])
        with scratch_database():
            started = time.perf_counter()
            # One benchmark agent makes every dispute: lift the per-agent cap
            # for the seed only (the pages are measured with it in place).
            with override_settings(VETTED_OPEN_DISPUTES_PER_AGENT=0):
                hostile = self._seed_hostile() if opts["hostile"] else []
                pending = self._seed(rng, total)
            seeded_in = time.perf_counter() - started
            client = Client(SERVER_NAME="localhost")
            client.force_login(scratch_reviewer())
            home = reverse("home")
            first_page = client.get(home)
            found = re.search(r"\?after=(\d+)", first_page.content.decode())
            if found is None:
                raise CommandError("the inbox page has no 'Load more' link")
            cursor = found.group(1)
            filtered = f"{home}?action=create&q=requests"
            found = re.search(r"after=(\d+)", client.get(filtered).content.decode())
            filtered_cursor = found.group(1) if found else ""
            pages = [
                ("inbox (first page)", home, {}),
                ("load more (htmx)", f"{home}?after={cursor}", {"HTTP_HX_REQUEST": "true"}),
                # Triage: a filter with counts and words, the same paged; the compact list
                # (?view= shows it for that page and stores nothing).
                ("filtered (create, q)", filtered, {}),
                ("filtered, load more", f"{filtered}&after={filtered_cursor}", {"HTTP_HX_REQUEST": "true"}),
                ("compact list", f"{home}?view=compact", {}),
            ]
            if hostile:
                pages[0] = (f"inbox ({HOSTILE_PAGE} hostile)", home, {})
                pages.insert(
                    0, ("hostile revise card", reverse("proposal_card", args=[hostile[0]]), {"HTTP_HX_REQUEST": "true"})
                )
            if opts["similar"]:
                from retrieval import index
                from retrieval.embeddings import get_embedder

                index.sync(get_embedder())  # embed the seeded records first: not part of a request
                creates = Proposal.objects.filter(state=ProposalState.PENDING, action="create").order_by("created_at")
                for proposal in creates[:3]:
                    pages.append(
                        (
                            f"similar {proposal.public_id[-4:]}",
                            reverse("proposal_similar", args=[proposal.public_id]),
                            {"HTTP_HX_REQUEST": "true"},
                        )
                    )
            rows = [self._measure(client, label, url, headers, renders) for label, url, headers in pages]
        self.stdout.write(
            f"seeded {pending} pending proposals in a temporary database in {seeded_in:.1f} s; "
            f"{renders} renders per page (first render discarded)"
        )
        self.stdout.write(
            f"{'page':<22} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'cpu med':>8} {'cpu p95':>8} "
            f"{'queries':>8} {'cards':>6} {'KB':>6}"
        )
        for r in rows:
            self.stdout.write(
                f"{r['label']:<22} {r['median']:>10.1f} {r['p95']:>8.1f} {r['max']:>8.1f} "
                f"{r['cpu_median']:>8.1f} {r['cpu_p95']:>8.1f} {r['queries']:>8} {r['cards']:>6} {r['kb']:>6.0f}"
            )

    def _seed_hostile(self) -> list[str]:
        """Revise proposals whose word diff is the worst case for a longest-match
        diff: both texts are a handful of short words repeated, in another order,
        so every word occurs thousands of times and no long match exists."""
        reviewer = scratch_reviewer()
        agent, _token = actions.create_agent("bench-hostile", spaces=["team"], actor=reviewer)
        ids = []
        for n in range(HOSTILE_PAGE):
            old = _repeat(f"Record {n}: ", "ab cd ef gh ", 1_000)
            proposal = actions.propose_create(
                agent=agent,
                reason="Benchmark seed record",
                kind="fact",
                space="team",
                title=f"Hostile record {n}",
                body=old,
                tags=[],
            )
            record = actions.accept_proposal(proposal, actor=reviewer).result_record
            assert record is not None
            new = _repeat(f"Revision {n}: ", "cd ab gh ef ij ", BODY_MAX)
            ids.append(
                actions.propose_revision(record, agent=agent, reason="Benchmark: hostile revision", body=new).public_id
            )
        return ids

    def _seed(self, rng, total: int) -> int:
        reviewer = scratch_reviewer()
        agent, _token = actions.create_agent("bench-agent", spaces=["personal", "team"], actor=reviewer)
        # A tenth of the pending proposals act on approved records (revise,
        # retire, dispute), so every card type is in the measurement.
        approved = []
        for n in range(max(total // 10, 3)):
            fields = {k: v for k, v in make_record(rng, n).items() if k in ("kind", "space", "title", "body", "tags")}
            proposal = actions.propose_create(agent=agent, reason="Benchmark seed record", **fields)
            approved.append(actions.accept_proposal(proposal, actor=reviewer).result_record)
        targets = iter(approved)
        n = 100_000
        floor = Proposal.objects.filter(state=ProposalState.PENDING).count()
        while Proposal.objects.filter(state=ProposalState.PENDING).count() < total + floor:
            n += 1
            choice = rng.random()
            target = next(targets, None) if choice < 0.1 else None
            if target is not None and choice < 0.05:
                actions.propose_revision(
                    target,
                    agent=agent,
                    reason="Benchmark: the limits changed",
                    body=target.body + f" Updated limits: {rng.randrange(2, 900)} requests per second.",
                )
            elif target is not None and choice < 0.08:
                actions.propose_retirement(target, agent=agent, reason="Benchmark: the service was shut down")
            elif target is not None:
                actions.dispute_record(target, agent=agent, reason="Benchmark: the owner changed last month")
            else:
                fields = {
                    k: v for k, v in make_record(rng, n).items() if k in ("kind", "space", "title", "body", "tags")
                }
                actions.propose_create(agent=agent, reason="Benchmark: seen in a design document", **fields)
        return Proposal.objects.filter(state=ProposalState.PENDING).count()

    def _measure(self, client, label, url, headers, renders) -> dict:
        queries = []

        def count(execute, sql, params, many, context):
            queries.append(sql)
            return execute(sql, params, many, context)

        # An execute wrapper, not CaptureQueriesContext: the request's
        # request_started signal resets the connection's query log.
        with connection.execute_wrapper(count):
            response = client.get(url, **headers)
        if response.status_code != 200:
            raise CommandError(f"{url} answered {response.status_code}")
        times, cpu = [], []
        for _ in range(renders):
            started, started_cpu = time.perf_counter(), time.thread_time()
            client.get(url, **headers)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - started_cpu) * 1000)
        times.sort()
        cpu.sort()
        p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
        return {
            "label": label,
            "median": statistics.median(times),
            "p95": p95,
            "max": times[-1],
            # CPU time of this thread: on a shared machine (load above the
            # core count) wall time mostly measures the wait for a core.
            "cpu_median": statistics.median(cpu),
            "cpu_p95": cpu[min(len(cpu) - 1, int(round(0.95 * (len(cpu) - 1))))],
            "queries": len(queries),
            "cards": response.content.decode().count("data-card tabindex"),
            "kb": len(response.content) / 1024,
        }


def _repeat(head: str, unit: str, size: int) -> str:
    return (head + unit * (size // len(unit) + 1))[:size].strip()
