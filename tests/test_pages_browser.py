"""Every page of the review site at phone (390x844) and desktop (1440x900)
size: it answers, fits (no sideways scroll; 44 px tap targets on a phone), and
with VETTED_SCREENSHOTS=1 its first screen is saved to tests/artifacts/pages/
(committed: what each page looks like, issue 13's "Done when"). The saved
files change only when someone asks for them, not on every run."""

from __future__ import annotations

import os

import pytest

from reviews import actions
from reviews.models import Agent
from tests import test_accessibility_browser as a11y
from tests import test_inbox_browser as base
from tests.test_inbox_browser import ARTIFACTS, assert_fits, signed_in

pytestmark = base.pytestmark
browser = base.browser  # fixtures shared with the other browser tests
every_kind = a11y.every_kind
PAGES = ARTIFACTS / "pages"


def pages(kind: dict) -> list[tuple[str, str]]:
    """(file name, path) of each page, in the order a reviewer meets them."""
    return [
        ("inbox-cards", "/?view=cards"),
        ("inbox-compact", "/?view=compact"),
        ("inbox-compact-expanded", f"/?view=compact&expand={kind['dispute'].pk}"),
        ("inbox-filtered-disputes", "/?action=dispute&view=cards"),
        ("hint-similar", f"/proposals/{kind['create'].public_id}/similar"),
        ("proposal-revise", f"/proposals/{kind['revision'].public_id}/revise"),
        ("dispute-correct", f"/proposals/{kind['dispute'].public_id}/revise"),
        ("reject-all-confirm", "/proposals/bulk-all?op=reject"),
        ("disputed", "/disputed/"),
        ("due", "/due/"),
        ("changed-outside", "/edited/"),
        ("records", "/records/"),
        ("record-detail", f"/records/{kind['kept'].public_id}/"),
        ("record-detail-changed-outside", f"/records/{kind['edited'].public_id}/"),
        ("recent-decisions", "/decisions/"),
        ("agents", "/agents/"),
        ("quality", "/quality/"),
        ("settings", "/settings/"),
    ]


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_every_page_answers_and_fits(
    browser, live_server, every_kind, reviewer, agent, team_agent, make_record, settings, size
):
    # Two more disputes from team-bot: a burst, so the inbox shows its folded warning.
    settings.VETTED_OPEN_DISPUTES_PER_AGENT = 0
    for n in range(2):
        record = make_record(title=f"Queue host {n}", body=f"The queue {n} runs on mq-{n}.internal for billing.")
        actions.dispute_record(record, agent=team_agent, reason="The queues moved to another cluster")
    # One decision already made, so Recent decisions lists something to undo.
    extra = actions.propose_create(
        agent=agent,
        reason="Read in the handbook",
        kind="fact",
        space="team",
        title="Lunch is at noon",
        body="The team has lunch at noon on weekdays in the kitchen on the second floor.",
        tags=["office"],
    )
    actions.accept_proposal(extra, actor=reviewer)
    save = os.environ.get("VETTED_SCREENSHOTS") == "1"
    # Device scale 1: the saved files stay small; the layout is the same.
    context, page = signed_in(browser, live_server, size, device_scale_factor=1)
    try:
        for name, path in pages(every_kind):
            response = page.goto(live_server.url + path)
            assert response is not None and response.status == 200, f"{path} answered {response and response.status}"
            page.wait_for_load_state("networkidle")  # the lazy hints have landed
            assert_fits(page, size)
            if save:
                PAGES.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(PAGES / f"{size}-{name}.png"))
    finally:
        context.close()


# --------------------------------------------------------------------------- Content-Security-Policy

# Collected in the page before any of its scripts run: every violation the
# browser reports, whether or not a script would have noticed.
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + e.sourceFile + ":" + e.lineNumber);
});
"""


def test_no_page_breaks_the_content_security_policy(browser, live_server, every_kind, reviewer, agent):
    """Chromium enforces the policy memory_site/csp.py sends: every page, the
    htmx requests they make (the lazy hints, the live poll), the agents
    page's moved handlers, the sign-in page and Swagger UI load without one
    violation or console error about it (browser: Chromium and a live server)."""
    context, page = signed_in(browser, live_server, "desktop", device_scale_factor=1)
    context.add_init_script(WATCH_CSP)
    console: list[str] = []

    def heard(message):
        if message.type == "error":
            console.append(message.text)

    page.on("console", heard)
    try:
        for _name, path in [*pages(every_kind), ("admin", "/admin/"), ("api-docs", "/api/v1/docs")]:
            response = page.goto(live_server.url + path)
            assert response is not None and response.status == 200, path
            assert "script-src 'self'" in (response.headers.get("content-security-policy") or ""), path
            page.wait_for_load_state("networkidle")
            assert page.evaluate("window.__csp") == [], path
        page.wait_for_selector("#swagger-ui .information-container", timeout=15_000)  # Swagger UI ran (the last page)
        assert page.evaluate("window.__csp") == []
        # The agents page: the token field selects itself, the revoke button asks first.
        page.goto(live_server.url + "/agents/")
        page.fill("input[name=name]", "csp-check")
        page.check("input[name=spaces][value=team]")
        page.get_by_role("button", name="Create agent").click()
        field = page.locator("textarea.token-value").first
        field.click()
        assert page.evaluate("document.activeElement.selectionEnd - document.activeElement.selectionStart") > 10
        asked: list[str] = []

        def answer(dialog):
            asked.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", answer)
        page.locator("button[aria-label='Revoke csp-check']").click()
        assert asked and asked[0].startswith("Revoke csp-check?")
        assert Agent.objects.get(name="csp-check").revoked_at is None  # dismissed: nothing sent
        assert page.evaluate("window.__csp") == []
        assert not [line for line in console if "Content Security Policy" in line], console
    finally:
        context.close()
    # Before signing in: the sign-in page.
    context = browser.new_context()
    context.add_init_script(WATCH_CSP)
    try:
        page = context.new_page()
        page.goto(live_server.url + "/accounts/login/")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__csp") == []
    finally:
        context.close()
