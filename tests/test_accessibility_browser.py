"""Accessibility in a real browser: axe-core on every page, light and dark, at
phone and desktop size; the skip link, the live region that announces
decisions, the bulk bar that never hides a control, and the counters, tab
title and nav badges that follow every decision without a reload.

axe-core is vendored in tests/vendor/axe/ (its README says which version) and
injected into each page; a failure lists every serious or critical violation
with the elements it found, so the message alone says what to fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from reviews import actions, setup_code
from reviews.models import Record
from tests.conftest import content
from tests.test_inbox_browser import PASSWORD, SIZES, browser, card, shot  # noqa: F401  (browser: a fixture)
from tests.test_inbox_browser import pytestmark as _browser_marks

pytestmark = _browser_marks

AXE = Path(__file__).parent / "vendor" / "axe" / "axe.min.js"
SERIOUS = ("serious", "critical")
# Lesser rules once broken here and fixed (the revise pages' h1, the agents
# table's last header): they stay fixed.
KEPT_FIXED = ("page-has-heading-one", "empty-table-header")

LONG_BODY = (
    "## Steps\n\n1. Run the **migrations** with `manage.py migrate`.\n2. Deploy from main.\n\n"
    "```\nkubectl --namespace=billing-production rollout restart deployment/billing-api-worker --context=prod\n```\n\n"
    "| step | owner |\n|---|---|\n| deploy | on-call |\n\n> Watch the error rate for ten minutes.\n\n"
    "See [the runbook](https://example.com/runbook)."
)


@pytest.fixture
def every_kind(reviewer, agent, team_agent, make_record):
    """A create, a revision, a retirement and a dispute pending; a record due,
    one disputed and one changed outside Vetted."""
    kept = make_record(title="Deploy checklist", body=LONG_BODY)
    retiring = make_record(title="Old VPN host", body="The VPN lives at vpn-old.internal.")
    disputed = make_record(title="Payment provider", body="Card payments go through acme-pay.")
    overdue = make_record(title="On-call rota", body="The rota rotates every Monday at nine.")
    Record.objects.filter(pk=overdue.pk).update(review_by=overdue.review_by.replace(year=2000))
    edited = make_record(title="Staging host", body="Staging uses db-staging.internal.")
    create = actions.propose_create(
        agent=agent,
        reason="Read in the on-call handbook",
        **content(title="Staging database port", body=LONG_BODY, tags=["staging"]),
    )
    revision = actions.propose_revision(
        kept, agent=agent, reason="Fifteen minutes now", body=kept.body.replace("ten minutes", "fifteen minutes")
    )
    retirement = actions.propose_retirement(retiring, agent=agent, reason="The old VPN was switched off")
    dispute = actions.dispute_record(disputed, agent=team_agent, reason="We changed provider in May")
    Record.objects.filter(pk=edited.pk).update(body="Staging uses db-staging-2.internal.")
    return {
        "kept": kept,
        "create": create,
        "revision": revision,
        "retirement": retirement,
        "dispute": dispute,
        "edited": edited,
    }


def new_page(browser, live_server, size, scheme, sign_in=True):  # noqa: F811
    context = browser.new_context(color_scheme=scheme, **SIZES[size])
    page = context.new_page()
    page.set_default_timeout(20_000)  # a busy 2-core machine: an htmx swap took over 10 s once
    if sign_in:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "rita")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("#pending-count")
        page.wait_for_load_state("load")
        page.wait_for_function("() => window.htmx !== undefined")
    return context, page


def axe_violations(page, name: str) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now,
    one readable line per rule and element."""
    page.wait_for_load_state("load")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated through the DevTools protocol rather than added as a <script>:
        # the site's Content-Security-Policy refuses inline scripts, and the pages
        # are checked under that policy as a reviewer's browser runs them.
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")
    # Lazy parts (the similar-records hint) load on "revealed": let them land.
    page.wait_for_load_state("networkidle")
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    lines = []
    for v in result["violations"]:
        if v["impact"] not in SERIOUS and v["id"] not in KEPT_FIXED:
            continue
        for node in v["nodes"]:
            lines.append(
                f"[{name}] {v['impact']} {v['id']}: {v['help']}\n"
                f"    at {' '.join(node['target'])}: {node['html'][:160]}\n"
                f"    {node.get('failureSummary', '').strip().replace(chr(10), ' / ')}"
            )
    return lines


def assert_no_serious(found: list[str]) -> None:
    if found:
        pytest.fail(f"{len(found)} serious or critical axe-core violation(s):\n" + "\n".join(found), pytrace=False)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_no_serious_axe_violation_on_any_page(browser, live_server, every_kind, size, scheme):  # noqa: F811
    found: list[str] = []
    context, page = new_page(browser, live_server, size, scheme, sign_in=False)
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        found += axe_violations(page, "login")
    finally:
        context.close()

    context, page = new_page(browser, live_server, size, scheme)
    try:
        kept, edited = every_kind["kept"], every_kind["edited"]
        found += axe_violations(page, "inbox")
        shot(page, f"a11y-{size}-{scheme}-inbox")
        # The inbox in its other states: a card's inline edit form, the reject
        # note open, the bulk bar shown, the keys dialog open.
        create = card(page, every_kind["create"])
        create.locator("label.check").click()
        card(page, every_kind["retirement"]).locator("summary", has_text="Keep record…").click()
        card(page, every_kind["dispute"]).locator("summary", has_text="Retire record…").click()
        card(page, every_kind["revision"]).get_by_role("link", name="Revise…").click()
        page.wait_for_selector(f"#proposal-{every_kind['revision'].pk}.editing")
        found += axe_violations(page, "inbox, editing")
        for name, path in (
            ("due", "/due/"),
            ("disputed", "/disputed/"),
            ("edited", "/edited/"),
            ("records", "/records/"),
            ("records search", "/records/?q=deploy&mode=keyword"),
            ("record detail", f"/records/{kept.public_id}/"),
            ("record detail, changed outside", f"/records/{edited.public_id}/"),
            ("record revise", f"/records/{kept.public_id}/revise"),
            ("proposal revise", f"/proposals/{every_kind['revision'].public_id}/revise"),
            ("dispute correct", f"/proposals/{every_kind['dispute'].public_id}/revise"),
            ("agents", "/agents/"),
            ("import instructions", "/import/"),
            ("inbox, by source file", "/?file=CLAUDE.md"),
            ("spaces", "/spaces/"),
            ("space page", "/spaces/team/"),
            ("waiting for your approval", "/waiting/"),
            ("quality", "/quality/"),
            ("settings", "/settings/"),
            ("recent decisions", "/decisions/"),
            ("inbox, filtered", "/?action=create&sort=newest"),
            ("inbox, bad filter", "/?action=delete"),
            ("reject all, confirm", "/proposals/bulk-all?op=reject"),
            ("hint page", f"/proposals/{every_kind['create'].public_id}/similar"),
            ("inbox, compact list", "/?view=compact"),
            ("inbox, compact list with a card open", f"/?view=compact&expand={every_kind['create'].pk}"),
            ("inbox, cards again", "/?view=cards"),
        ):
            page.goto(live_server.url + path)
            found += axe_violations(page, name)
    finally:
        context.close()
    assert_no_serious(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_axe_violation_on_the_first_run_page(browser, live_server, db, monkeypatch, scheme):  # noqa: F811
    monkeypatch.setattr("inbox.middleware._user_exists", False)
    setup_code.ensure()
    try:
        for size in SIZES:
            context, page = new_page(browser, live_server, size, scheme, sign_in=False)
            try:
                page.goto(f"{live_server.url}/setup/")
                page.wait_for_selector("input[name=code]")
                assert_no_serious(axe_violations(page, f"first run, {size}"))
            finally:
                context.close()
    finally:
        setup_code.discard()


def text(page, selector: str) -> str:
    return page.inner_text(selector).strip()


def said(page, words: str | re.Pattern[str]) -> None:
    """The live region reads ``words`` out. It is swapped in by the same
    response as the tab title, but as a separate swap: under load (1-minute
    load ~10) the title had changed while the region still held the previous
    decision's words, so wait for it (15 s) instead of reading it once."""
    expect(page.locator("#live-status")).to_have_text(words, timeout=15_000)


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_skip_links_lead_to_the_content_and_the_first_card(browser, live_server, every_kind, size):  # noqa: F811
    context, page = new_page(browser, live_server, size, "light")
    try:
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent.trim()") == "Skip to main content"
        assert page.locator(".skip-link").first.is_visible()  # shown once focused
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent.trim()") == "Skip to the first proposal"
        page.keyboard.press("Enter")
        first = page.evaluate("document.querySelector('[data-card]').id")
        assert page.evaluate("document.activeElement.id") == first
        # The focused card is the one the keys act on (x selects it; the first
        # card is a dispute, disputes first, so no single key decides it).
        page.keyboard.press("x")
        assert page.locator(f"#{first} input[type=checkbox]").is_checked()
        # Every other page has the skip link to its main content.
        page.goto(live_server.url + "/records/")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_every_count_the_tab_title_and_the_live_region_follow_each_decision(
    browser,  # noqa: F811
    live_server,
    every_kind,
    size,
):
    context, page = new_page(browser, live_server, size, "light")
    try:
        assert page.title() == "Inbox (4) · Vetted"
        before = {k: int(text(page, f"#{k}")) for k in ("approved-stat", "due-stat", "disputed-stat", "agents-stat")}
        assert before == {"approved-stat": 4, "due-stat": 1, "disputed-stat": 1, "agents-stat": 2}

        card(page, every_kind["create"]).get_by_role("button", name="Accept").click()
        page.wait_for_function("() => document.title === 'Inbox (3) · Vetted'")
        said(page, "Accepted: Staging database port. 3 waiting.")
        assert text(page, "#pending-count") == "3" and text(page, "#approved-stat") == "5"

        # Retiring the disputed record: the disputed counts (header and tile) drop.
        dispute = card(page, every_kind["dispute"])
        dispute.locator("summary", has_text="Retire record…").click()
        dispute.get_by_role("button", name="Retire record", exact=True).click()
        page.wait_for_function("() => document.title === 'Inbox (2) · Vetted'")
        said(page, "Retired record: Payment provider. 2 waiting.")
        assert text(page, "#disputed-count") == "0" and text(page, "#disputed-stat") == "0"

        # Keeping the record (the retirement proposal is rejected): the approved tile stays.
        retirement = card(page, every_kind["retirement"])
        retirement.locator("summary", has_text="Keep record…").click()
        retirement.locator("[data-decision=keep] input[name=note]").fill("Still used by the night shift")
        retirement.get_by_role("button", name="Keep record", exact=True).click()
        page.wait_for_function("() => document.title === 'Inbox (1) · Vetted'")
        said(page, "Kept record: Old VPN host. 1 waiting.")
        assert text(page, "#approved-stat") == "5" and text(page, "#pending-count") == "1"

        # On the due page: verifying updates the page's total and tab title
        # and the header's Due count, and is read out.
        page.goto(live_server.url + "/due/")
        assert page.title() == "Due for review (1) · Vetted"
        page.get_by_role("button", name="Verify").click()
        page.wait_for_function("() => document.title === 'Due for review (0) · Vetted'")
        assert text(page, "#worklist-total") == "0" and text(page, "#due-count") == "0"
        said(page, re.compile(r"^Verified: On-call rota; next review by"))
    finally:
        context.close()


def test_ctrl_enter_sends_the_edit_form_from_the_body(browser, live_server, every_kind):  # noqa: F811
    context, page = new_page(browser, live_server, "desktop", "light")
    try:
        revision = every_kind["revision"]
        card(page, revision).get_by_role("link", name="Revise…").click()
        body = page.locator(f"#proposal-{revision.pk}.editing textarea[name=body]")
        body.fill("Watch the error rate for twenty minutes.")
        body.press("Control+Enter")
        page.wait_for_selector(f"#proposal-{revision.pk}.decided")
        revision.refresh_from_db()
        assert revision.state == "accepted" and revision.result_record.body.endswith("twenty minutes.")
    finally:
        context.close()


UNDER_THE_BAR = """() => {
    // Every control of every card, brought into view the way a reviewer
    // reaches it (focus scrolls it in), must be on top at its centre: not
    // under the fixed bulk bar.
    const hidden = [];
    const controls = document.querySelectorAll(
        '[data-card] button, [data-card] a, [data-card] summary, [data-card] input:not([type=hidden])');
    for (const el of controls) {
        if (!el.checkVisibility({visibilityProperty: true})) continue;  // e.g. inside a closed <details>
        el.focus();
        el.scrollIntoView({block: 'nearest'});
        const r = el.getBoundingClientRect();
        const x = r.left + Math.min(r.width / 2, 20), y = r.top + r.height / 2;
        const top = document.elementFromPoint(x, y);
        if (!top || !(el === top || el.contains(top) || top.contains(el) && top.tagName === 'LABEL')) {
            const label = (el.textContent || el.name || '').trim().slice(0, 30);
            const over = top && top.id ? '#' + top.id : top && top.tagName;
            hidden.push(`${el.tagName} "${label}" under ${over}`);
        }
    }
    return hidden;
}"""


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_bulk_bar_never_hides_a_control(browser, live_server, every_kind, size):  # noqa: F811
    context, page = new_page(browser, live_server, size, "light")
    try:
        card(page, every_kind["create"]).locator("label.check").click()
        page.locator("#bulk").wait_for(state="visible")
        # Scrolled to the very end: the last card's controls sit above the bar.
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        last = page.evaluate("[...document.querySelectorAll('[data-card]')].pop().id")
        for button in page.locator(f"#{last} .actions > form > button, #{last} .actions > .button").all():
            box = button.bounding_box()
            on_top = page.evaluate(
                "([x, y, id]) => document.elementFromPoint(x, y)?.closest('#' + id) !== null",
                [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, last],
            )
            assert on_top, f"{button.inner_text()} of the last card is under the bulk bar at {size}"
        bar = page.locator("#bulk").bounding_box()
        shot(page, f"a11y-{size}-bulk-bar-at-the-end")
        assert bar["height"] > 40
        # And anywhere on the page: a control reached by focus is never under it.
        hidden = page.evaluate(UNDER_THE_BAR)
        assert not hidden, f"controls under the bulk bar at {size}: {hidden}"
    finally:
        context.close()
