"""The inbox in a real browser (Debian's Chromium driven by Playwright), at
phone and desktop size, with clicks and with the keyboard.

Run only these with `pytest -m browser`; they are part of the default suite.
Screenshots land in tests/artifacts/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import pytest

from reviews import actions
from reviews.models import Proposal, ProposalState, RecordStatus
from tests.conftest import content

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
PASSWORD = "a-long-password-1"  # the reviewer fixture's
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
# reduced_motion: cards scroll into view at once, so a click never lands on
# an element that is still moving.
SIZES = {
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 3,
        "reduced_motion": "reduce",
    },
    "desktop": {"viewport": {"width": 1440, "height": 900}, "reduced_motion": "reduce"},
}

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytestmark = [
        pytest.mark.browser,
        pytest.mark.skip(reason="/usr/bin/chromium is missing (apt-get install -y chromium); CI installs it"),
    ]
else:
    pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    # Sync Playwright keeps an event loop in this thread; Django then refuses
    # ORM calls from the test body unless told that this is fine (it is: the
    # test body and the loop never run at the same time).
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "1"
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def seeded(reviewer, agent, make_record):
    """Three proposals to decide: two creates and a revision of an approved record."""
    record = make_record(
        title="Deploy checklist",
        body="1. Run the **migrations**.\n2. Deploy `acme/billing-api` from main.\n"
        "3. Watch the error rate for ten minutes.",
    )
    first = actions.propose_create(
        agent=agent,
        reason="Read in the on-call handbook",
        **content(
            title="Staging database host",
            body="Staging uses `db-staging.internal` on port 5433; credentials are in the vault under *staging/db*.",
            tags=["staging", "database"],
        ),
    )
    revision = actions.propose_revision(
        record,
        agent=agent,
        reason="The team now watches for fifteen minutes",
        body=record.body.replace("ten minutes", "fifteen minutes and the latency"),
    )
    third = actions.propose_create(
        agent=agent,
        reason="Heard in a meeting",
        **content(
            title="Friday deploys",
            body="We never deploy on Fridays after noon, except for security fixes approved by the lead.",
            kind="decision",
            tags=["deploys"],
        ),
    )
    return {"record": record, "first": first, "revision": revision, "third": third}


def signed_in(browser, live_server, size, **options):
    """A new browser context at ``size`` (``options`` go to ``new_context``,
    e.g. ``java_script_enabled=False``), signed in as rita on the inbox; the
    caller closes the context. Returns (context, page)."""
    context = browser.new_context(**{**cast(dict[str, Any], SIZES[size]), **options})
    page = context.new_page()
    page.set_default_timeout(10_000)
    # The first request of a run also starts the live server's work: on a loaded machine it took over 10 s.
    page.goto(f"{live_server.url}/accounts/login/", timeout=30_000)
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#pending-count", state="attached")  # signed in (hidden in the no-JS nav)
    return context, page


@pytest.fixture
def page_without_js(browser, live_server, reviewer, size):
    """A page signed in as rita with JavaScript off, at the test's ``size``
    parameter: the plain-form path every control must also work on. Ask for
    it after the fixtures that seed the inbox, so its first page shows them."""
    context, page = signed_in(browser, live_server, size, java_script_enabled=False)
    yield page
    context.close()


def wait_for_hints(page, pk: int) -> None:
    """Wait until the card's hints have arrived: until then a decision key is
    held (static/vetted/hints.js), as a reviewer sees the hints first."""
    page.wait_for_function("sel => !document.querySelector(sel)", arg=f'#proposal-{pk} [data-hints="loading"]')


def open_page(browser, live_server, size):
    context, page = signed_in(browser, live_server, size)
    # Every card fetches its hints when the page loads, so a decision's swap can
    # queue behind them: with two test workers each driving Chromium on 2 cores
    # one took over 10 s (CI). The accessibility tests allow 20 s for the same reason.
    page.set_default_timeout(20_000)
    # keys.js and htmx are deferred scripts: a key pressed before they ran
    # would be lost (seen once on a loaded machine).
    page.wait_for_load_state("load")
    page.wait_for_function("() => window.htmx !== undefined")
    return context, page


def choose_view(page, base: str, view: str) -> None:
    """Choose the inbox view as a reviewer does: the switch on the inbox (a
    plain form POST this device remembers; a GET with ?view= stores nothing)."""
    page.goto(f"{base}/")
    switch = page.locator("#view-switch")
    if switch.get_attribute("data-view") == view:
        with page.expect_navigation():
            switch.click()


def assert_fits(page, size):
    """No sideways scrolling; at phone size every control is at least 44 px tall (and wide)."""
    # The stylesheet must have arrived: an element can be visible before it
    # has (a loaded machine showed 17 px links measured unstyled).
    page.wait_for_load_state("load")
    page.wait_for_function("() => getComputedStyle(document.body).margin === '0px'")
    # Against the configured width, not window.innerWidth: a mobile browser
    # widens its layout viewport to fit content that overflows, so innerWidth
    # would grow with the very overflow we look for.
    width = SIZES[size]["viewport"]["width"]
    overflow = page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)") - width
    assert overflow <= 0, f"{overflow}px of horizontal scroll at {size} on {page.url}"
    if size != "phone":
        return
    small = page.evaluate("""() => {
        const out = [];
        const targets = 'button, a.button, summary, select, textarea, label.check, header nav a, '
            + 'input:not([type=hidden]):not([type=checkbox])';
        for (const el of document.querySelectorAll(targets)) {
            const r = el.getBoundingClientRect();
            const style = getComputedStyle(el);
            if (r.width === 0 || r.height === 0 || style.visibility === 'hidden') continue;
            const label = (el.textContent || el.name || '').trim().slice(0, 30);
            if (r.height < 44 || r.width < 44) {
                out.push(`${el.tagName}.${el.className} "${label}" ${Math.round(r.width)}x${Math.round(r.height)}`);
            }
        }
        return out;
    }""")
    assert not small, f"tap targets under 44 px: {small}"


def shot(page, name, full=False):
    page.wait_for_load_state("load")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full)


def card(page, proposal):
    return page.locator(f"#proposal-{proposal.pk}")


def wait_decided(page, proposal, text):
    page.wait_for_selector(f"#proposal-{proposal.pk}.decided")
    assert text.lower() in card(page, proposal).inner_text().lower()


def refreshed(proposal):
    return Proposal.objects.select_related("result_record").get(pk=proposal.pk)


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_decide_three_proposals_with_clicks(browser, live_server, seeded, size):
    context, page = open_page(browser, live_server, size)
    try:
        assert page.inner_text("#pending-count").strip() == "3"
        assert_fits(page, size)
        shot(page, f"{size}-inbox")
        shot(page, f"{size}-inbox-full", full=True)

        # Accept the first as proposed.
        card(page, seeded["first"]).get_by_role("button", name="Accept").click()
        wait_decided(page, seeded["first"], "Accepted")
        page.wait_for_function("() => document.getElementById('pending-count').textContent.trim() === '2'")

        # Revise the second (a revision): edit inline, accept the edited version.
        card(page, seeded["revision"]).get_by_role("link", name="Revise…").click()
        page.wait_for_selector(f"#proposal-{seeded['revision'].pk}.editing textarea[name=body]")
        assert_fits(page, size)
        shot(page, f"{size}-revise")
        editing = card(page, seeded["revision"])
        editing.locator("input[name=title]").fill("Deploy checklist (with latency)")
        editing.get_by_role("button", name="Accept edited version").click()
        wait_decided(page, seeded["revision"], "Accepted")

        # Reject the third with a note for the agent.
        card(page, seeded["third"]).locator("summary", has_text="Reject").click()
        card(page, seeded["third"]).locator("input[name=note]").fill("Only a rumour so far")
        card(page, seeded["third"]).get_by_role("button", name="Reject", exact=True).click()
        wait_decided(page, seeded["third"], "Rejected")
        assert page.inner_text("#pending-count").strip() == "0"
        assert_fits(page, size)

        first, revision, third = (refreshed(seeded[k]) for k in ("first", "revision", "third"))
        assert first.state == ProposalState.ACCEPTED
        assert revision.state == ProposalState.ACCEPTED
        assert revision.result_record.title == "Deploy checklist (with latency)"
        assert revision.reviewer_changes == {"title": "Deploy checklist (with latency)"}
        assert third.state == ProposalState.REJECTED and third.decision_note == "Only a rumour so far"
        seeded["record"].refresh_from_db()
        assert seeded["record"].status == RecordStatus.SUPERSEDED

        # The record page of the revised record: body, fields, versions, write log.
        card(page, seeded["revision"]).get_by_role("link", name=revision.result_record.public_id).click()
        page.wait_for_selector("h2:has-text('Write log')")
        assert "Deploy checklist" in page.inner_text("ol.chain")
        assert "text matches approval" in page.inner_text("article.record")
        assert_fits(page, size)
        shot(page, f"{size}-record")
        shot(page, f"{size}-record-full", full=True)
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_decide_three_proposals_with_the_keyboard(browser, live_server, seeded, size):
    context, page = open_page(browser, live_server, size)
    try:
        page.keyboard.press("?")
        page.wait_for_selector("#keys-help[open]")
        page.keyboard.press("Escape")

        page.keyboard.press("j")
        page.wait_for_selector(f"#proposal-{seeded['first'].pk}.current")
        wait_for_hints(page, seeded["first"].pk)
        page.keyboard.press("a")
        wait_decided(page, seeded["first"], "Accepted")
        # The focus moves on to the next pending card by itself.
        page.wait_for_selector(f"#proposal-{seeded['revision'].pk}.current")

        page.keyboard.press("e")
        page.wait_for_selector(f"#proposal-{seeded['revision'].pk}.editing")
        title = card(page, seeded["revision"]).locator("input[name=title]")
        title.fill("Deploy checklist, keyboard edition")
        title.press("Enter")
        wait_decided(page, seeded["revision"], "Accepted")

        page.wait_for_selector(f"#proposal-{seeded['third'].pk}.current")
        page.keyboard.press("r")
        note = card(page, seeded["third"]).locator("input[name=note]")
        note.wait_for(state="visible")
        page.keyboard.type("Needs a source")
        page.keyboard.press("Enter")
        wait_decided(page, seeded["third"], "Rejected")
        assert page.inner_text("#pending-count").strip() == "0"

        first, revision, third = (refreshed(seeded[k]) for k in ("first", "revision", "third"))
        assert first.state == ProposalState.ACCEPTED
        assert revision.result_record.title == "Deploy checklist, keyboard edition"
        assert third.state == ProposalState.REJECTED and third.decision_note == "Needs a source"
    finally:
        context.close()


def test_pages_work_without_javascript(browser, live_server, seeded):
    context = browser.new_context(java_script_enabled=False, **SIZES["phone"])
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        assert_fits(page, "phone")
        shot(page, "phone-login")
        page.fill("input[name=username]", "rita")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        card(page, seeded["first"]).get_by_role("button", name="Accept").click()
        page.wait_for_selector("text=Accepted: Staging database host.")  # by title, with an Undo toast
        card(page, seeded["third"]).locator("summary", has_text="Reject").click()
        card(page, seeded["third"]).locator("input[name=note]").fill("No source")
        card(page, seeded["third"]).get_by_role("button", name="Reject", exact=True).click()
        page.wait_for_selector("text=Rejected: Friday deploys.")
        assert refreshed(seeded["third"]).decision_note == "No source"
        # Revise without JavaScript: a page of its own, then back to the inbox.
        card(page, seeded["revision"]).get_by_role("link", name="Revise…").click()
        page.wait_for_selector("textarea[name=body]")
        assert_fits(page, "phone")
        shot(page, "phone-nojs-revise", full=True)
        page.fill("input[name=title]", "Deploy checklist (no JS)")
        page.get_by_role("button", name="Accept edited version").click()
        page.wait_for_selector("text=Accepted: Deploy checklist (no JS).")
        assert refreshed(seeded["revision"]).result_record.title == "Deploy checklist (no JS)"
        for path in ("/due/", "/disputed/", "/records/?q=deploy", "/agents/", "/settings/"):
            page.goto(live_server.url + path)
            assert_fits(page, "phone")
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_other_pages_fit_and_work_in_dark_mode(browser, live_server, seeded, agent, make_record, size):
    overdue = make_record(
        title="Old on-call rota", body="The on-call rota lives in the ops calendar and rotates every Monday at nine."
    )
    Record = type(overdue)
    Record.objects.filter(pk=overdue.pk).update(review_by=overdue.review_by.replace(year=2000))
    disputed = make_record(
        title="Payment provider", body="Card payments go through the acme-pay provider, configured in billing-api."
    )
    actions.dispute_record(disputed, agent=agent, reason="We changed provider in May; see the finance wiki")
    wide = make_record(
        title="Wide content",
        body=(
            "A long command and a long link must not push the page sideways:\n\n"
            "```\nkubectl --namespace=billing-production-eu-west-1 rollout restart "
            "deployment/billing-api-worker-queue-consumer-v2 --context=prod\n```\n\n"
            "https://example.com/" + "a" * 150 + " and | a | table |\n|---|---|\n| " + "wide-cell-" * 20 + " | x |"
        ),
    )
    context, page = signed_in(browser, live_server, size, color_scheme="dark")
    try:
        shot(page, f"{size}-dark-inbox")
        for name, path in (
            ("due", "/due/"),
            ("disputed", "/disputed/"),
            ("records", "/records/?q=payment+provider&mode=keyword&as_agent=1&reader_spaces=team"),
            ("agents", "/agents/"),
            ("settings", "/settings/"),
            ("wide-record", f"/records/{wide.public_id}/"),
        ):
            page.goto(live_server.url + path)
            assert_fits(page, size)
            shot(page, f"{size}-dark-{name}", full=True)
        # Verify the overdue record in one click; the Due count drops.
        page.goto(live_server.url + "/due/")
        page.locator(f"#record-{overdue.pk}").get_by_role("button", name="Verify").click()
        page.wait_for_selector(f"#record-{overdue.pk}.decided")
        assert page.inner_text("#due-count").strip() == "0"
        # Create an agent: the token is shown once.
        page.goto(live_server.url + "/agents/")
        page.fill("input[name=name]", "cursor")
        page.check("input[name=spaces][value=team]")
        page.get_by_role("button", name="Create agent").click()
        page.wait_for_selector("#token-panel")
        assert page.input_value(".token-value").startswith("vt_")
        assert_fits(page, size)
        shot(page, f"{size}-dark-agent-token")
    finally:
        context.close()


def test_bulk_accept_from_the_phone(browser, live_server, seeded):
    context, page = open_page(browser, live_server, "phone")
    try:
        bar = page.locator("#bulk")
        assert not bar.is_visible()  # only once something is selected
        card(page, seeded["first"]).locator("label.check").tap()
        card(page, seeded["third"]).locator("label.check").tap()
        bar.wait_for(state="visible")
        box = bar.bounding_box()
        assert box["y"] + box["height"] <= 844 + 1  # pinned to the bottom, in thumb reach
        assert_fits(page, "phone")
        shot(page, "phone-bulk")
        bar.get_by_role("button", name="Accept selected").tap()
        page.wait_for_selector("text=Accepted 2:")
        assert page.inner_text("#pending-count").strip() == "1"
        assert refreshed(seeded["first"]).state == ProposalState.ACCEPTED
        assert refreshed(seeded["third"]).state == ProposalState.ACCEPTED
        assert refreshed(seeded["revision"]).state == ProposalState.PENDING
    finally:
        context.close()
