"""The desktop detail pane (issue 13 §2, inbox-fast): at 1440x900 the compact
list sits on the left and one open card on the right. The pane follows the
selection (a click, j/k), a decision made in it shows in the list, only one
card is ever open, and without JavaScript each line is a link that opens its
card in the pane. axe-core finds no serious violation; the screenshot is
tests/artifacts/pages/desktop-inbox-pane.png."""

from __future__ import annotations

import os

from devtools.bench_review_page import SETTLED
from reviews.models import Proposal, ProposalState
from tests import test_accessibility_browser as a11y
from tests.test_inbox_browser import (
    ARTIFACTS,
    assert_fits,
    browser,  # noqa: F401  # the fixture
    choose_view,
    open_page,
    pytestmark,  # noqa: F401  # the marks
    signed_in,
    wait_for_hints,
)
from tests.test_inbox_triage_browser import triage_seed  # noqa: F401  # fixture

OPEN = "#cards > [data-card]:not(.line):not(.decided)"


def pane(page) -> dict:
    """Where the open card and the list's first line are, and how many cards are open."""
    return page.evaluate(
        """sel => {
            const open = [...document.querySelectorAll(sel)];
            const line = document.querySelector('#cards > .line').getBoundingClientRect();
            const box = open[0] ? open[0].getBoundingClientRect() : null;
            return {ids: open.map(c => c.id), left: box && box.left, top: box && box.top,
                    line_right: line.right, line_top: line.top};
        }""",
        OPEN,
    )


def wait_open(page, proposal) -> dict:
    """Wait until ``proposal``'s card is open and htmx has processed its controls (and put the line it
    replaced back, if any), then say where it is."""
    page.wait_for_selector(f"#proposal-{proposal.pk}:not(.line) .actions")
    page.wait_for_function(SETTLED, arg=f"proposal-{proposal.pk}")
    page.wait_for_function(f"() => document.querySelectorAll('{OPEN}').length === 1")
    return pane(page)


def test_the_pane_follows_the_selection_and_a_decision_in_it_shows_in_the_list(
    browser,  # noqa: F811
    live_server,
    triage_seed,  # noqa: F811
):
    disputes = triage_seed["disputes"]
    first_create = triage_seed["creates"][0]
    context, page = open_page(browser, live_server, "desktop")
    try:
        choose_view(page, live_server.url, "compact")
        # Nothing chosen yet: the first line (a dispute, disputes first) opens beside the list.
        at = wait_open(page, disputes[0])
        assert at["ids"] == [f"proposal-{disputes[0].pk}"]
        assert at["left"] >= at["line_right"], "the open card is beside the list, not in it"
        assert abs(at["top"] - at["line_top"]) < 40, "the pane starts level with the list"
        # j moves the selection; the pane follows, and the card that was open is a line again.
        page.locator(f"#proposal-{disputes[0].pk}").focus()
        page.keyboard.press("j")
        at = wait_open(page, disputes[1])
        assert at["ids"] == [f"proposal-{disputes[1].pk}"]
        page.wait_for_selector(f"#proposal-{disputes[0].pk}.line")
        assert page.eval_on_selector_all("#cards > .current", "els => els.map(e => e.id)") == [
            f"proposal-{disputes[1].pk}"
        ], "only the open card is marked as the current one"
        page.keyboard.press("k")
        at = wait_open(page, disputes[0])
        assert at["ids"] == [f"proposal-{disputes[0].pk}"]
        # A click on a line further down opens it instead.
        page.locator(f"#proposal-{first_create.pk} .line-main").click()
        at = wait_open(page, first_create)
        assert at["ids"] == [f"proposal-{first_create.pk}"]
        if os.environ.get("VETTED_SCREENSHOTS") == "1":
            (ARTIFACTS / "pages").mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "pages" / "desktop-inbox-pane.png"))
        assert_fits(page, "desktop")
        a11y.assert_no_serious(a11y.axe_violations(page, "inbox pane"))
        # Accept in the pane: the list shows it decided where its line was, and the next line opens.
        page.locator(f"#proposal-{first_create.pk}").get_by_role("button", name="Accept").click()
        page.wait_for_selector(f"#proposal-{first_create.pk}.decided")
        assert Proposal.objects.get(pk=first_create.pk).state == ProposalState.ACCEPTED
        decided = page.evaluate(
            "id => { const c = document.getElementById(id), l = document.querySelector('#cards > .line');"
            " return [c.getBoundingClientRect().left, l.getBoundingClientRect().left] }",
            f"proposal-{first_create.pk}",
        )
        assert decided[0] == decided[1], "the decided card sits in the list, in its line's place"
        following = triage_seed["creates"][1]
        at = wait_open(page, following)
        assert at["ids"] == [f"proposal-{following.pk}"]
        # The pane's keys decide the open card: a accepts it.
        page.locator(f"#proposal-{following.pk}").focus()
        wait_for_hints(page, following.pk)
        page.keyboard.press("a")
        page.wait_for_selector(f"#proposal-{following.pk}.decided")
        assert Proposal.objects.get(pk=following.pk).state == ProposalState.ACCEPTED
        wait_open(page, triage_seed["creates"][2])
        assert len(pane(page)["ids"]) == 1
    finally:
        context.close()


def accept_without_js(page, proposal) -> None:
    """Accept an open card as a plain form. The server holds a flagged
    proposal (the seed's "Service N runs on port 800N" contradict each other)
    for the confirm that names it; then it is accepted."""
    page.locator(f"#proposal-{proposal.pk}").get_by_role("button", name="Accept").click()
    held, done = page.locator("#bulk-held"), page.get_by_text("Accepted:")
    held.or_(done).first.wait_for()
    if held.count():
        page.click("#bulk-all-confirm")
        done.wait_for()


def test_without_javascript_a_line_is_a_link_that_opens_its_card_in_the_pane(
    browser,  # noqa: F811
    live_server,
    triage_seed,  # noqa: F811
):
    context, page = signed_in(browser, live_server, "desktop", java_script_enabled=False)
    try:
        choose_view(page, live_server.url, "compact")
        assert pane(page)["ids"] == []  # nothing opens by itself without JavaScript
        chosen = triage_seed["creates"][3]
        page.locator(f"#proposal-{chosen.pk} .line-main").click()
        page.wait_for_selector(f"#proposal-{chosen.pk}:not(.line) .actions")
        at = pane(page)
        assert at["ids"] == [f"proposal-{chosen.pk}"] and at["left"] >= at["line_right"]
        accept_without_js(page, chosen)
        assert Proposal.objects.get(pk=chosen.pk).state == ProposalState.ACCEPTED
    finally:
        context.close()


def test_below_the_wide_layout_a_line_still_opens_in_place(browser, live_server, triage_seed):  # noqa: F811
    # 1199 px: no pane; the compact list's lines expand where they are, as on a phone.
    context, page = signed_in(browser, live_server, "desktop", viewport={"width": 1199, "height": 900})
    try:
        choose_view(page, live_server.url, "compact")
        page.wait_for_function("() => window.htmx !== undefined")
        page.wait_for_timeout(300)
        assert pane(page)["ids"] == []  # nothing opens by itself
        chosen = triage_seed["creates"][0]
        page.locator(f"#proposal-{chosen.pk} .line-main").click()
        at = wait_open(page, chosen)
        assert at["left"] < at["line_right"], "in place, in the list's one column"
    finally:
        context.close()


def test_without_javascript_a_line_past_the_first_page_opens_its_card_on_that_page(
    browser,  # noqa: F811
    live_server,
    triage_seed,  # noqa: F811
):
    # The line's plain link (?expand=) kept only the filters: on the page after
    # "Load more" it led to the first page, which lacks that proposal, and
    # nothing opened. Desktop: in the pane; phone: in place.
    for size in ("desktop", "phone"):
        context, page = signed_in(browser, live_server, size, java_script_enabled=False)
        try:
            choose_view(page, live_server.url, "compact")
            page.locator("#load-more").click()
            page.wait_for_url("**after=*")
            first = page.locator("#cards > .line").first
            chosen = Proposal.objects.get(pk=int(first.get_attribute("id").removeprefix("proposal-")))
            first.locator(".line-main").click()
            page.wait_for_selector(f"#proposal-{chosen.pk}:not(.line) .actions")
            at = pane(page)
            assert at["ids"] == [f"proposal-{chosen.pk}"] and "after=" in page.url
            beside = at["left"] >= at["line_right"]
            assert beside if size == "desktop" else not beside
            if size == "desktop":
                accept_without_js(page, chosen)
                assert Proposal.objects.get(pk=chosen.pk).state == ProposalState.ACCEPTED
                assert "after=" in page.url, "back on the page it was decided from"
        finally:
            context.close()
