"""Benchmark a reviewer at phone size: seed a realistic mix of proposals in a
scratch database, serve it, and drive Chromium (390x844) through the inbox,
deciding every card by tap or by key as its plan says (reviews/inbox/bench_review.py).

Prints taps and keys per decision by plan, server time per decision and per
page (median, p95: measured around Django's handler in the server thread),
HTML/CSS/JS bytes of the first inbox page (as sent, and uncompressed), the
proposals visible in the first screen, and the wall time for all decisions.
Never touches the real database.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--no-first-run"]
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 3,
    "reduced_motion": "reduce",
}
PASSWORD = "bench-review-password-1"
# True once htmx has processed the card's controls (its internal data on them).
SETTLED = """id => [...document.querySelectorAll('#' + id + ' [hx-get], #' + id + ' [hx-post]')]
    .every(el => el['htmx-internal-data'] && el['htmx-internal-data'].initHash)"""


def _p95(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))] if values else 0.0


class Timed:
    """Wraps the live server's WSGI handler: (method, path, ms, status) of
    every request (the status for a failed run's report)."""

    def __init__(self, app):
        self.app, self.log = app, []

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        status = ["?"]

        def recording(code, headers, *exc_info):
            status[0] = code
            return start_response(code, headers, *exc_info)

        try:
            return list(self.app(environ, recording))
        finally:
            ms = (time.perf_counter() - started) * 1000
            self.log.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], ms, status[0]))


HINTS_IN = "id => !document.querySelector('#' + id + ' [data-hints=\"loading\"]')"


class Command(BaseCommand):
    help = "Seed N pending proposals in a scratch database and review them all in Chromium at phone size."

    def add_arguments(self, parser):
        parser.add_argument("--proposals", type=int, default=100, help="pending proposals to seed and decide")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--view", choices=["compact", "cards"], default="compact", help="the inbox view the reviewer works in"
        )

    def handle(self, *args, **opts):
        total = opts["proposals"]
        if total < 5:
            raise CommandError("--proposals must be at least 5")
        if not CHROMIUM.exists():
            raise CommandError(f"{CHROMIUM} is missing (apt-get install -y chromium)")
        from django.test.testcases import LiveServerThread

        from memory_site.static_files import ensure_collected
        from retrieval.scratch import scratch_database, scratch_reviewer

        from ...bench_review import seed

        ensure_collected()  # the server sends the hashed, compressed files, as `serve` does
        # Sync Playwright runs an event loop in this thread; the ORM calls here
        # never overlap with it.
        os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "1")
        with scratch_database():
            reviewer = scratch_reviewer()
            reviewer.set_password(PASSWORD)
            reviewer.save()
            plan = seed(random.Random(opts["seed"]), total, reviewer)
            # As `serve` does at startup: the model loaded and the seeded
            # records embedded before the clock starts (a reviewer meets a
            # running server, not its first model load).
            from retrieval import index
            from retrieval.embeddings import get_embedder

            index.sync(get_embedder())
            # And the pending proposals' vectors the similar-records hint
            # compares against: a live server embeds proposals as they arrive
            # (one per hint); the seed delivers a hundred in one second.
            from retrieval.similar import pending_vectors
            from reviews.models import Proposal, ProposalAction, ProposalState

            waiting = Proposal.objects.filter(
                state=ProposalState.PENDING, action__in=[ProposalAction.CREATE, ProposalAction.REVISE]
            )
            pending_vectors.for_proposals(list(waiting), get_embedder())
            timed: list[Timed] = []

            def handler(app):
                timed.append(Timed(app))
                return timed[0]

            # The "static handler" slot wraps Django's handler; ours times it
            # (static files are WhiteNoise's, inside, as under `serve`).
            server = LiveServerThread("localhost", handler, port=0)  # type: ignore[arg-type]
            server.daemon = True
            server.start()
            server.is_ready.wait()
            if server.error:
                raise CommandError(f"the live server did not start: {server.error}")
            try:
                report = self._review(f"http://localhost:{server.port}", plan, timed[0], opts["view"])
            finally:
                server.terminate()
        self._print(report, total, opts["view"])

    def _review(self, base: str, plan: dict[str, str], timed: Timed, view: str) -> dict:
        from playwright.sync_api import sync_playwright

        from ...bench_review import UNDO_AFTER, plan_steps

        counts: dict[str, list[int]] = defaultdict(list)
        decisions: list[float] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            context = browser.new_context(**PHONE)
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.goto(base + "/accounts/login/")
            page.fill("input[name=username]", "bench")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_selector("#pending-count")
            sizes = self._first_page_bytes(context, base)
            # Proposals wholly inside the first screen, in each view; the
            # reviewer then works in ``view`` (remembered per reviewer).
            first_screen = {}
            for name in ("cards", view) if view != "cards" else ("compact", "cards"):
                page.goto(f"{base}/?view={name}")
                first_screen[name] = page.evaluate(
                    "[...document.querySelectorAll('[data-card]')]"
                    ".filter(c => c.getBoundingClientRect().bottom <= innerHeight).length"
                )
            started = time.perf_counter()
            done = 0
            undone = False
            while done < len(plan):
                page.goto(base + "/")
                page.wait_for_load_state("load")
                page.wait_for_function("window.htmx !== undefined")
                ids = page.eval_on_selector_all("[data-card]:not(.decided)", "cards => cards.map(c => c.id)")
                if not ids:
                    raise CommandError(f"{len(plan) - done} proposals left but no card on the inbox")
                for card_id in ids:
                    public_id = page.get_attribute(f"#{card_id} input[name=ids]", "value") or ""
                    how = plan[public_id]
                    card = page.locator(f"#{card_id}")
                    card.scroll_into_view_if_needed()
                    # The keys act on the current card: focusing it makes it current (not counted).
                    card.focus()
                    taps = keys = 0
                    for step in plan_steps(how, view):
                        # A reviewer reads the hints before deciding (a decision key waits for them),
                        # also those of a line just opened into its card.
                        page.wait_for_function(HINTS_IN, arg=card_id)
                        if step.tap:
                            page.locator(f"#{card_id} {step.tap}").first.tap()
                            taps += 1
                        elif step.key:
                            page.keyboard.press(step.key)
                            keys += 1
                        elif step.type:
                            page.keyboard.type(step.type)
                        if step.wait:
                            wait = (
                                step.wait.replace("&", f"#{card_id}", 1)
                                if "&" in step.wait
                                else f"#{card_id} {step.wait}"
                            )
                            page.locator(wait).first.wait_for(state="visible")
                        if step.settle:
                            page.wait_for_function(SETTLED, arg=card_id)
                    try:
                        page.wait_for_selector(f"#{card_id}.decided")
                    except Exception as error:
                        raise CommandError(self._stuck(page, card_id, how, timed)) from error
                    counts[how].append(taps + keys)
                    done += 1
                    if done == UNDO_AFTER and not undone:
                        # Undo by key (the toast's Undo is a plain form: the page
                        # reloads with the proposal pending again), then decide it again.
                        page.wait_for_selector("#undo-toast [data-undo]")
                        with page.expect_navigation():
                            page.keyboard.press("u")
                        counts["undo the last decision by key"].append(1)
                        undone = True
                        done -= 1
                        break
            wall = time.perf_counter() - started
            browser.close()
        for method, path, ms, _status in timed.log:
            if method == "POST" and (path.startswith("/proposals/") or path == "/decisions/undo"):
                decisions.append(ms)
        pages: dict[str, list[float]] = defaultdict(list)
        for method, path, ms, _status in timed.log:
            if method == "GET" and not path.startswith("/static/"):
                pages["similar (htmx)" if path.endswith("/similar") else path if path == "/" else "other"].append(ms)
        return {
            "counts": counts,
            "decisions": decisions,
            "pages": pages,
            "sizes": sizes,
            "first_screen": first_screen,
            "wall": wall,
        }

    def _stuck(self, page, card_id: str, how: str, timed: Timed) -> str:
        """What a run that waited in vain for a decided card saw: the card, the focus, the last requests."""
        shown = page.evaluate(
            "id => { const c = document.getElementById(id); return [c ? c.outerHTML.slice(0, 600) : 'no card',"
            " document.activeElement && document.activeElement.outerHTML.slice(0, 200)] }",
            card_id,
        )
        requests = [f"  {method} {path} {status} {ms:.0f} ms" for method, path, ms, status in timed.log[-12:]]
        return "\n".join(
            [f"#{card_id} ({how}) never showed as decided", f"card: {shown[0]}", f"focus: {shown[1]}", "last requests:"]
            + requests
        )

    def _first_page_bytes(self, context, base: str) -> dict[str, list[int]]:
        """Bytes of the inbox page and its files in a fresh tab with an empty
        cache: [as sent, uncompressed] per type."""
        # A context of its own (signed in, empty cache): every file is fetched.
        fresh = context.browser.new_context(**PHONE, storage_state=context.storage_state())
        page = fresh.new_page()
        sizes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        responses = []
        page.on("response", lambda response: responses.append(response))
        page.goto(base + "/")
        page.wait_for_load_state("networkidle")
        for response in responses:
            kind = {"document": "HTML", "stylesheet": "CSS", "script": "JS"}.get(response.request.resource_type)
            if kind is None:
                continue
            sent = response.request.sizes()["responseBodySize"]
            sizes[kind][0] += sent
            sizes[kind][1] += len(response.body())
        fresh.close()
        return dict(sizes)

    def _print(self, r: dict, total: int, view: str) -> None:
        out = self.stdout.write
        out(f"bench_review: {total} proposals decided at 390x844 ({view} view) in {r['wall']:.1f} s of wall time")
        out(f"{'plan':<30} {'decisions':>9} {'taps+keys':>10}")
        for how, values in sorted(r["counts"].items()):
            out(f"{how:<30} {len(values):>9} {statistics.median(values):>10.0f}")
        out(f"{'server time (ms)':<30} {'requests':>9} {'median':>10} {'p95':>8}")
        rows = [("decision (POST)", r["decisions"])] + sorted(r["pages"].items())
        for label, values in rows:
            if values:
                out(f"{label:<30} {len(values):>9} {statistics.median(values):>10.1f} {_p95(values):>8.1f}")
        out(f"{'first inbox page, bytes':<30} {'as sent':>9} {'plain':>10}")
        for kind in ("HTML", "CSS", "JS"):
            sent, plain = r["sizes"].get(kind, [0, 0])
            out(f"{kind:<30} {sent:>9} {plain:>10}")
        for name, n in sorted(r["first_screen"].items()):
            out(f"proposals wholly inside the first screen, {name} view: {n}")
