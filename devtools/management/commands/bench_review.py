"""Benchmark a reviewer on a phone and on a desktop: seed a realistic mix of
proposals (with a burst of disputes from one agent) in a scratch database,
serve it, and drive Chromium through the inbox at each size (390x844 phone,
1280x800 desktop), deciding every card by tap or by key as its plan says
(devtools/bench_review.py).

Prints, per size: taps and keys per decision by plan and overall (inputs per
decision), scrolls per decision (a scroll is counted each time the reviewer
must move the page to see a card's top and its decision controls, or a control
a step taps), decisions after which the Undo toast covered a control, whole
cards and compact lines inside the first screen, server time per decision and
per page (median, p95: measured around Django's handler in the server thread),
HTML/CSS/JS bytes of the first inbox page (as sent, and uncompressed), and the
wall time for all decisions. Never touches the real database.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ...bench_review_page import (
    ARGS,
    CHROMIUM,
    DEFAULT_VIEW,
    HINTS_IN,
    REVEAL,
    REVEAL_CONTROL,
    SETTLED,
    SIZES,
    TOAST_COVERS,
    WHOLE_IN_FIRST_SCREEN,
    Timed,
    p95,
)

PASSWORD = "bench-review-password-1"


class Command(BaseCommand):
    help = "Seed N pending proposals in a scratch database and review them all in Chromium, on a phone and a desktop."

    def add_arguments(self, parser):
        parser.add_argument("--proposals", type=int, default=100, help="pending proposals to seed and decide")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--view",
            choices=["compact", "cards"],
            default="",
            help="the inbox view the reviewer works in (default: compact on the phone, cards on the desktop)",
        )
        parser.add_argument(
            "--size", choices=["phone", "desktop", "both"], default="both", help="the screen(s) to review on"
        )
        parser.add_argument(
            "--first-screen-only",
            action="store_true",
            help="measure the first screen in both views and stop (no decisions)",
        )

    def handle(self, *args, **opts):
        total = opts["proposals"]
        if total < 5:
            raise CommandError("--proposals must be at least 5")
        if not CHROMIUM.exists():
            raise CommandError(f"{CHROMIUM} is missing (apt-get install -y chromium)")
        if opts["size"] == "both":
            # Each size in a process of its own, over a scratch database of its
            # own: a second scratch database migrated in the process that served
            # the first (its live server's request threads gone or not) lost its
            # connection mid-migrate about one run in three on a loaded machine.
            for size in ("phone", "desktop"):
                argv = [sys.executable, "manage.py", "bench_review", "--size", size, "--proposals", str(total)]
                argv += ["--seed", str(opts["seed"])] + (["--view", opts["view"]] if opts["view"] else [])
                argv += ["--first-screen-only"] if opts["first_screen_only"] else []
                self.stdout.flush()
                if subprocess.run(argv, cwd=settings.BASE_DIR).returncode:
                    raise CommandError(f"the {size} run failed (its output is above)")
            return
        size = opts["size"]
        view = opts["view"] or DEFAULT_VIEW[size]
        report = self._run(total, opts["seed"], size, view, opts["first_screen_only"])
        self._print(report, total, size, view)

    def _run(self, total: int, rng_seed: int, size: str, view: str, first_only: bool = False) -> dict:
        from django.test.testcases import LiveServerThread

        from common.static_files import ensure_collected
        from devtools.scratch import scratch_database, scratch_reviewer

        from ...bench_review import seed

        ensure_collected()  # the server sends the hashed, compressed files, as `serve` does
        # Sync Playwright runs an event loop in this thread; the ORM calls here
        # never overlap with it.
        os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "1")
        with scratch_database():
            reviewer = scratch_reviewer()
            reviewer.set_password(PASSWORD)
            reviewer.save()
            plan = seed(random.Random(rng_seed), total, reviewer)
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
                return self._review(f"http://localhost:{server.port}", plan, timed[0], view, SIZES[size], first_only)
            finally:
                server.terminate()

    def _review(
        self, base: str, plan: dict[str, str], timed: Timed, view: str, device: dict, first_only: bool = False
    ) -> dict:
        from playwright.sync_api import sync_playwright

        from ...bench_review import UNDO_AFTER, plan_steps

        counts: dict[str, list[int]] = defaultdict(list)
        decisions: list[float] = []
        scrolls: list[int] = []
        covered: list[int] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            context = browser.new_context(**device)
            page = context.new_page()
            # 60 s: on a machine loaded by other work (load 13-16 on 2 cores) an accept queued
            # behind the first page's 25 hint requests took over 15 s; the bench counts inputs
            # and scrolls, which a longer wait does not change.
            page.set_default_timeout(60_000)
            page.goto(base + "/accounts/login/")
            page.fill("input[name=username]", "bench")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_selector("#pending-count")
            sizes = self._first_page_bytes(context, base, device)
            # Cards (lines) wholly inside the first screen, in each view; the
            # reviewer then works in ``view``, chosen as on any device: the
            # switch (a POST that this device remembers).
            first_screen = {}
            for name in ("compact", "cards") if view == "cards" else ("cards", "compact"):
                page.goto(base + "/")
                if page.locator(f"#view-switch[data-view={name}]").count():
                    with page.expect_navigation():
                        page.click("#view-switch")
                page.wait_for_load_state("networkidle")
                first_screen[name] = page.evaluate(WHOLE_IN_FIRST_SCREEN)
            if first_only:
                browser.close()
                return {"first_screen": first_screen}
            started = time.perf_counter()
            done = 0
            undone = False
            while done < len(plan):
                page.goto(base + "/")
                page.wait_for_load_state("load")
                page.wait_for_function("() => window.htmx !== undefined")
                ids = page.eval_on_selector_all("[data-card]:not(.decided)", "cards => cards.map(c => c.id)")
                if not ids:
                    raise CommandError(f"{len(plan) - done} proposals left but no card on the inbox")
                for card_id in ids:
                    public_id = page.get_attribute(f"#{card_id} input[name=ids]", "value") or ""
                    how = plan[public_id]
                    card = page.locator(f"#{card_id}")
                    moved = page.evaluate(REVEAL, card_id)
                    # The keys act on the current card: focusing it makes it current (not counted).
                    card.focus(timeout=60_000)
                    taps = keys = 0
                    try:
                        for step in plan_steps(how, view):
                            moved, taps, keys = self._step(page, card_id, step, device, moved, taps, keys)
                        page.wait_for_selector(f"#{card_id}.decided")
                    except Exception as error:
                        raise CommandError(self._stuck(page, card_id, how, timed)) from error
                    counts[how].append(taps + keys)
                    scrolls.append(moved)
                    # keys.js has moved on to the next card (and scrolled to it, unasked).
                    page.wait_for_timeout(50)
                    covered.append(page.evaluate(TOAST_COVERS))
                    done += 1
                    if done == UNDO_AFTER and not undone:
                        # Undo by key (the toast's Undo is a plain form: the page
                        # reloads with the proposal pending again), then decide it again.
                        page.wait_for_selector("#undo-toast [data-undo]", state="attached")
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
            "scrolls": scrolls,
            "covered": covered,
        }

    def _step(self, page, card_id: str, step, device: dict, moved: int, taps: int, keys: int) -> tuple[int, int, int]:
        """One step of a plan on the card: (scrolls, taps, keys) so far, after it."""
        # A reviewer reads the hints before deciding (a decision key waits for them),
        # also those of a line just opened into its card.
        page.wait_for_function(HINTS_IN, arg=card_id)
        if step.tap:
            control = page.locator(f"#{card_id} {step.tap}").first
            moved += control.evaluate(REVEAL_CONTROL)
            control.tap() if device.get("has_touch") else control.click()
            taps += 1
        elif step.key:
            page.keyboard.press(step.key)
            keys += 1
        elif step.type:
            page.keyboard.type(step.type)
        if step.wait:
            wait = step.wait.replace("&", f"#{card_id}", 1) if "&" in step.wait else f"#{card_id} {step.wait}"
            page.locator(wait).first.wait_for(state="visible")
        if step.settle:
            page.wait_for_function(SETTLED, arg=card_id)
        return moved, taps, keys

    def _stuck(self, page, card_id: str, how: str, timed: Timed) -> str:
        """What a run that waited in vain (for a decided card, or to tap a
        control) saw: the card, the focus, the last requests, and a screenshot."""
        shot = Path(tempfile.gettempdir()) / f"bench-review-{card_id}.png"
        page.screenshot(path=str(shot))
        boxes = page.evaluate(
            "() => [...document.querySelectorAll('[data-card], #undo-toast')].map(e => { const r ="
            " e.getBoundingClientRect(); return e.id + ' ' + e.className + ' ' + Math.round(r.top) + '..' +"
            " Math.round(r.bottom) }).filter(t => !/ -?\\d+\\.\\.-/.test(t)).slice(0, 40).join('\\n')"
        )
        shown = page.evaluate(
            "id => { const c = document.getElementById(id); return [c ? c.outerHTML.slice(0, 600) : 'no card',"
            " document.activeElement && document.activeElement.outerHTML.slice(0, 200)] }",
            card_id,
        )
        requests = [f"  {method} {path} {status} {ms:.0f} ms" for method, path, ms, status in timed.log[-12:]]
        return "\n".join(
            [f"#{card_id} ({how}) never showed as decided", f"card: {shown[0]}", f"focus: {shown[1]}", "last requests:"]
            + requests
            + [f"screenshot: {shot}", f"scrollY {page.evaluate('scrollY')}; boxes:", boxes]
        )

    def _first_page_bytes(self, context, base: str, device: dict) -> dict[str, list[int]]:
        """Bytes of the inbox page and its files in a fresh tab with an empty
        cache: [as sent, uncompressed] per type."""
        # A context of its own (signed in, empty cache): every file is fetched.
        fresh = context.browser.new_context(**device, storage_state=context.storage_state())
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

    def _print(self, r: dict, total: int, size: str, view: str) -> None:
        out = self.stdout.write
        screen = "{width}x{height}".format(**SIZES[size]["viewport"])
        if "wall" not in r:
            for name, n in sorted(r["first_screen"].items()):
                what = "lines" if name == "compact" else "cards"
                out(f"{screen} ({size}): {what} wholly inside the first screen, {name} view: {n}")
            return
        out(f"bench_review: {total} proposals decided at {screen} ({size}, {view} view) in {r['wall']:.1f} s")
        out(f"{'plan':<30} {'decisions':>9} {'taps+keys':>10}")
        for how, values in sorted(r["counts"].items()):
            out(f"{how:<30} {len(values):>9} {statistics.median(values):>10.0f}")
        made = [n for how, values in r["counts"].items() if not how.startswith("undo") for n in values]
        inputs = sum(n for values in r["counts"].values() for n in values)
        out(f"decisions: {len(made)}; inputs per decision: {inputs / max(len(made), 1):.2f}")
        out(f"scrolls per decision: {sum(r['scrolls']) / max(len(r['scrolls']), 1):.2f} ({sum(r['scrolls'])} in all)")
        out(
            f"decisions after which the Undo toast covered a control: {sum(1 for n in r['covered'] if n)}"
            f" of {len(r['covered'])} ({sum(r['covered'])} controls covered in all)"
        )
        out(f"{'server time (ms)':<30} {'requests':>9} {'median':>10} {'p95':>8}")
        rows = [("decision (POST)", r["decisions"])] + sorted(r["pages"].items())
        for label, values in rows:
            if values:
                out(f"{label:<30} {len(values):>9} {statistics.median(values):>10.1f} {p95(values):>8.1f}")
        out(f"{'first inbox page, bytes':<30} {'as sent':>9} {'plain':>10}")
        for kind in ("HTML", "CSS", "JS"):
            sent, plain = r["sizes"].get(kind, [0, 0])
            out(f"{kind:<30} {sent:>9} {plain:>10}")
        for name, n in sorted(r["first_screen"].items()):
            what = "lines" if name == "compact" else "cards"
            out(f"{what} wholly inside the first screen, {name} view: {n}")
