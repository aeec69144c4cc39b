"""The reviewer process of the stress and crash tests (`python -m
devtools.stress reviewer ...`): decides proposals as they come, through
reviews.actions or through the site's forms (a signed-in session), logging
each decision like the agent processes do (devtools/stress.py)."""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

from devtools.stress_log import Log


def run_reviewer(args) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from reviews import actions
    from reviews.errors import VettedError
    from reviews.models import Proposal, ProposalState

    rng = random.Random(args.seed)
    log = Log(Path(args.out))
    reviewer = get_user_model().objects.get(username=args.reviewer)
    # The reviewer's window opens at the first pending proposal, not at
    # start-up: on a loaded machine (load 10) the agents' first proposal came
    # 11 s after this process started (two cold daemons), and a ten-second run
    # decided nothing. It gives up if no proposal comes at all.
    give_up = time.monotonic() + args.seconds + 60
    deadline = give_up
    counts = {"accepted": 0, "revised": 0, "rejected": 0, "conflict": 0, "failed": 0}
    site = SiteSession(args) if args.via == "site" else None
    opened = False
    while time.monotonic() < deadline:
        pending = list(
            Proposal.objects.filter(state=ProposalState.PENDING).order_by("?").values_list("public_id", "action")[:20]
        )
        if not pending:
            time.sleep(0.05)
            continue
        if not opened:
            opened, deadline = True, min(give_up, time.monotonic() + args.seconds)
        for public_id, action in pending:
            if time.monotonic() >= deadline:
                break
            roll = rng.random()
            decision = (
                "reject" if roll < 0.25 else ("revise" if roll < 0.45 and action in ("create", "revise") else "accept")
            )
            started = time.perf_counter()
            try:
                if site is not None:
                    status = site.decide(public_id, decision)
                    if status >= 500:
                        raise RuntimeError(f"site answered {status}")
                    ok = status in (200, 302)
                elif decision == "accept":
                    actions.accept_proposal(public_id, actor=reviewer, note="stress accept")
                    ok = True
                elif decision == "reject":
                    actions.reject_proposal(public_id, actor=reviewer, note="stress reject")
                    ok = True
                else:
                    proposal = Proposal.objects.get(public_id=public_id)
                    actions.accept_proposal_with_revision(
                        public_id,
                        actor=reviewer,
                        note="stress revise",
                        changes={"body": proposal.body + " Checked by the reviewer."},
                    )
                    ok = True
            except VettedError as exc:  # decided meanwhile, target gone: a refusal, not a failure
                counts["conflict"] += 1
                log.write(
                    role="reviewer",
                    op=decision,
                    result="refused",
                    message=exc.message[:200],
                    ms=(time.perf_counter() - started) * 1000,
                )
                continue
            except Exception as exc:
                counts["failed"] += 1
                log.write(
                    role="reviewer",
                    op=decision,
                    result="failed",
                    message=f"{type(exc).__name__}: {exc}"[:300],
                    ms=(time.perf_counter() - started) * 1000,
                )
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if ok:
                counts[{"accept": "accepted", "reject": "rejected", "revise": "revised"}[decision]] += 1
                log.write(role="reviewer", op=decision, result="ok", proposal_id=public_id, ms=elapsed)
            else:
                counts["conflict"] += 1
                log.write(role="reviewer", op=decision, result="refused", proposal_id=public_id, ms=elapsed)
    log.write(role="reviewer", summary=counts)
    return 0


class SiteSession:
    """The reviewer deciding through the daemon's inbox forms (plain POSTs
    with a session cookie and the CSRF token), as a person's browser would."""

    def __init__(self, args):
        import http.cookiejar
        import urllib.request

        self.base = args.url
        self.jar = http.cookiejar.CookieJar()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None

        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)
        page = self.opener.open(self.base + "/accounts/login/", timeout=30).read().decode()
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if found is None:
            raise RuntimeError(f"no CSRF token on the login page of {self.base}")
        token = found.group(1)
        self._post(
            "/accounts/login/", {"username": args.reviewer, "password": args.password, "csrfmiddlewaretoken": token}
        )
        # A refused sign-in answers 200 (the form again), and every later POST
        # a 302 to the login page, which would pass for a decision: say so now.
        if not any(c.name == "sessionid" for c in self.jar):
            raise RuntimeError(f"could not sign in to {self.base} as {args.reviewer!r}")
        self.csrf = next(c.value for c in self.jar if c.name == "csrftoken")

    def _post(self, path: str, fields: dict) -> tuple[int, str]:
        import urllib.error
        import urllib.parse
        import urllib.request

        data = urllib.parse.urlencode(fields).encode()
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method="POST",
            headers={"Referer": self.base + "/", "X-CSRFToken": getattr(self, "csrf", "")},
        )
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.code, ""

    def decide(self, public_id: str, decision: str) -> int:
        if decision == "revise":
            decision = "accept"  # the site's revise form needs every field; accept is enough to stress it
        fields = {"csrfmiddlewaretoken": self.csrf}
        if decision == "reject":
            fields["note"] = "stress reject"
        status, page = self._post(f"/proposals/{public_id}/{decision}", fields)
        if decision == "accept" and status == 200 and 'id="bulk-held"' in page:
            # A plain-form accept of a flagged proposal answers with the confirm
            # that names it (nothing decided yet): the reviewer confirms it.
            confirm = {**fields, "ids": public_id, "op": "accept", "flagged_ok": public_id}
            status, _ = self._post("/proposals/bulk", confirm)
        return status
