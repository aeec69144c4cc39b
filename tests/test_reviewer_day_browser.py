"""The reviewer's day in a real browser (Chromium): the first phone screen
shows the work with a hundred proposals and a burst; Undo sits in the decided
card's place and covers no control; `j` loads the next page when the page has
no undecided card left; the list/cards choice is per device (a POST, never a
GET); keys go to other pages. Slow: each test starts Chromium against a live
server, and the first seeds the bench's hundred proposals."""

from __future__ import annotations

import random
import time

import pytest

from devtools.bench_review import seed
from devtools.bench_review_page import REVEAL, TOAST_COVERS, WHOLE_IN_FIRST_SCREEN
from inbox import inbox_views
from reviews import actions
from tests.conftest import GOOD_BODY, content
from tests.test_inbox_browser import assert_fits, browser, open_page, pytestmark, shot, wait_for_hints  # noqa: F401  # fixture, marks

pytestmark = [*pytestmark, pytest.mark.slow]


def choose(page, view: str) -> None:
    """Choose a view the way a reviewer does: the switch (a POST this device remembers)."""
    switch = page.locator("#view-switch")
    if switch.get_attribute("data-view") == view:
        with page.expect_navigation():
            switch.click()
    page.wait_for_function("() => window.htmx !== undefined")


@pytest.fixture
def hundred(reviewer):
    """The bench's hundred: creates, near duplicates, contradictions,
    revisions, retirements and disputes from three agents, ten disputes in one burst."""
    return seed(random.Random(7), 100, reviewer)


def test_the_first_phone_screen_shows_two_cards_or_eight_lines_with_a_burst(browser, live_server, hundred):  # noqa: F811
    context, page = open_page(browser, live_server, "phone")
    try:
        header = page.locator("header.site").bounding_box()
        assert header and header["height"] <= 60, f"the navigation takes {header} on a phone: one row expected"
        assert page.locator("#dispute-warnings details:not([open])").count() == 1  # one line, closed
        assert "3 agents" in page.inner_text("#dispute-warnings summary")
        choose(page, "cards")
        page.wait_for_load_state("networkidle")
        cards = page.evaluate(WHOLE_IN_FIRST_SCREEN)
        shot(page, "phone-reviewer-day-cards")
        assert cards >= 2, f"{cards} whole cards inside the first phone screen"
        assert page.locator("button.show-all").count() >= 1  # long bodies folded, with Show all
        assert_fits(page, "phone")
        choose(page, "compact")
        page.wait_for_load_state("networkidle")
        lines = page.evaluate(WHOLE_IN_FIRST_SCREEN)
        shot(page, "phone-reviewer-day-compact")
        assert lines >= 8, f"{lines} whole lines inside the first phone screen"
        # Two lines of title and a legible agent on each line.
        title = page.locator(".line-title").first
        assert title.evaluate("e => getComputedStyle(e).webkitLineClamp") == "2"
        agent = page.locator(".line-agent").first
        assert agent.evaluate("e => e.scrollWidth <= e.clientWidth"), "the agent's name is cut"
        assert_fits(page, "phone")
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_undo_sits_in_the_decided_cards_place_and_covers_no_control(browser, live_server, agent, size):  # noqa: F811
    made = [
        actions.propose_create(
            agent=agent, reason="Seen in the repo", **content(title=f"Port {n} service", body=f"{GOOD_BODY} Port {n}.")
        )
        for n in range(6)
    ]
    context, page = open_page(browser, live_server, size)
    try:
        choose(page, "compact")
        for proposal in made[:3]:
            card_id = f"proposal-{proposal.pk}"
            page.evaluate(REVEAL, card_id)
            wait_for_hints(page, proposal.pk)  # a line's Accept waits for its flags
            button = page.locator(f"#{card_id} form[action$='/accept'] button")
            button.tap() if size == "phone" else button.click()
            page.wait_for_selector(f"#{card_id}.decided #undo-toast [data-undo]")
            page.wait_for_timeout(100)
            assert page.locator("#undo-toast").count() == 1  # only the newest decision's Undo
            assert page.evaluate(TOAST_COVERS) == 0
        shot(page, f"{size}-reviewer-day-undo")
        # u still undoes the newest decision.
        with page.expect_navigation():
            page.keyboard.press("u")
        page.wait_for_selector(f"#proposal-{made[2].pk}:not(.decided)")
    finally:
        context.close()


@pytest.mark.parametrize("order", ["decide-then-open", "open-then-decide"])
def test_a_decision_is_shown_when_its_line_opens_while_it_is_on_its_way(
    browser,  # noqa: F811
    live_server,
    agent,
    monkeypatch,
    order,
):
    """Accept on a line, and the line opening into its card (a click on it, or
    the desktop pane opening the next line after a decision), race: whichever
    answer landed last used to win, so a slow decision landing after the opened
    card replaced a card no longer on the page: accepted on the server, the
    card still offering Accept. The decision is slowed here so the opening
    always lands first."""
    made = [
        actions.propose_create(
            agent=agent, reason="Seen in the repo", **content(title=f"Cache {n} host", body=f"{GOOD_BODY} Cache {n}.")
        )
        for n in range(3)
    ]
    accept = actions.accept_proposal

    def slow_accept(*args, **kwargs):
        time.sleep(1.0)  # the decision is still on its way when the card opens
        return accept(*args, **kwargs)

    monkeypatch.setattr(actions, "accept_proposal", slow_accept)
    context, page = open_page(browser, live_server, "desktop")
    try:
        choose(page, "compact")
        page.wait_for_load_state("networkidle")  # the first line has opened into the pane
        line = page.locator(".cards.compact-list > .line").first
        card_id = line.get_attribute("id")
        proposal = next(p for p in made if f"proposal-{p.pk}" == card_id)
        wait_for_hints(page, proposal.pk)
        # Both requests leave in one task, before either answer can land.
        page.evaluate(
            """([id, first]) => { const line = document.getElementById(id);
            const open = line.querySelector('.line-main');
            const decide = line.querySelector("form[action$='/accept'] button");
            for (const el of first === 'decide' ? [decide, open] : [open, decide]) el.click(); }""",
            [card_id, order.split("-")[0]],
        )
        page.wait_for_selector(f"#{card_id}.decided #undo-toast [data-undo]")
        page.wait_for_timeout(1500)  # anything still on its way has landed
        assert page.locator(f"#{card_id}.decided").count() == 1
        assert page.locator(f"#{card_id}:not(.decided)").count() == 0
        proposal.refresh_from_db()
        assert proposal.state == "accepted"
    finally:
        context.close()


def test_the_pane_keeps_a_card_whose_decision_is_on_its_way_when_the_next_line_opens(
    browser,  # noqa: F811
    live_server,
    agent,
    monkeypatch,
):
    """On a desktop one card is open beside the list, and opening another line
    folds the open card back into its line: not while that card's decision is
    on its way, or its answer would land on a card no longer on the page."""
    made = [
        actions.propose_create(
            agent=agent, reason="Seen in the repo", **content(title=f"Mail {n} relay", body=f"{GOOD_BODY} Mail {n}.")
        )
        for n in range(3)
    ]
    accept = actions.accept_proposal

    def slow_accept(*args, **kwargs):
        time.sleep(1.5)  # the next line opens meanwhile
        return accept(*args, **kwargs)

    monkeypatch.setattr(actions, "accept_proposal", slow_accept)
    context, page = open_page(browser, live_server, "desktop")
    try:
        choose(page, "compact")
        page.wait_for_selector(".cards.compact-list > [data-card]:not(.line)")  # the first line, open in the pane
        card_id = page.locator(".cards.compact-list > [data-card]:not(.line)").first.get_attribute("id")
        second_id = page.locator(".cards.compact-list > .line").first.get_attribute("id")
        assert {card_id, second_id} <= {f"proposal-{p.pk}" for p in made}
        wait_for_hints(page, int(card_id.split("-")[1]))
        page.locator(f"#{card_id} form[action$='/accept'] button").click()
        page.locator(f"#{second_id} .line-main").click()  # opens the next line while the decision is on its way
        page.wait_for_selector(f"#{second_id}:not(.line)")
        page.wait_for_selector(f"#{card_id}.decided #undo-toast [data-undo]")
    finally:
        context.close()


def test_j_loads_the_next_page_when_no_undecided_card_is_left(browser, live_server, agent, monkeypatch):  # noqa: F811
    monkeypatch.setattr(inbox_views, "PAGE_SIZE", 3)
    made = [
        actions.propose_create(
            agent=agent, reason="Seen in the repo", **content(title=f"Queue {n} host", body=f"{GOOD_BODY} Queue {n}.")
        )
        for n in range(5)
    ]
    context, page = open_page(browser, live_server, "desktop")
    try:
        choose(page, "cards")
        page.keyboard.press("j")
        for proposal in made[:3]:
            page.wait_for_selector(f"#proposal-{proposal.pk}.current")
            wait_for_hints(page, proposal.pk)  # a decision key waits for the card's hints
            page.keyboard.press("a")
            page.wait_for_selector(f"#proposal-{proposal.pk}.decided")
        assert page.locator("[data-card]:not(.decided)").count() == 0
        page.keyboard.press("j")
        page.wait_for_selector(f"#proposal-{made[3].pk}.current")
        wait_for_hints(page, made[3].pk)
        page.keyboard.press("a")
        page.wait_for_selector(f"#proposal-{made[3].pk}.decided")
    finally:
        context.close()


def test_the_view_is_chosen_per_device_by_a_post(browser, live_server, agent):  # noqa: F811
    actions.propose_create(agent=agent, reason="Seen in the repo", **content())
    desktop, page = open_page(browser, live_server, "desktop")
    phone, other = open_page(browser, live_server, "phone")
    try:
        requests = []
        page.on("request", lambda r: requests.append((r.method, r.url)))
        choose(page, "compact")
        assert ("POST", f"{live_server.url}/inbox/view") in requests
        page.goto(f"{live_server.url}/")
        page.wait_for_selector("#cards")
        # Remembered on this device. A desktop is wide enough for the detail pane,
        # where the first line opens into its card by itself: count either.
        assert page.locator("#cards.compact-list > [data-card]").count() == 1
        other.goto(f"{live_server.url}/")
        other.wait_for_selector("#cards")
        assert other.locator("#cards .card.line").count() == 0  # the phone did not choose
        # A GET with ?view= shows that view once and stores nothing.
        other.goto(f"{live_server.url}/?view=compact")
        assert other.locator("#cards .card.line").count() == 1
        assert not [c for c in phone.cookies() if c["name"] == "vetted_inbox_view"]
        other.goto(f"{live_server.url}/")
        assert other.locator("#cards .card.line").count() == 0
    finally:
        desktop.close()
        phone.close()


def test_keys_go_to_pages_and_filters(browser, live_server, agent, make_record):  # noqa: F811
    actions.propose_create(agent=agent, reason="Seen in the repo", **content(title="Port 8000 service"))
    actions.dispute_record(make_record(), agent=agent, reason="The repository moved")
    context, page = open_page(browser, live_server, "desktop")
    try:
        page.keyboard.press("]")  # the next action filter: Create (disputes sort first, but chips follow the menu)
        page.wait_for_function("() => location.search.includes('action=')")
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.name") == "q"
        page.keyboard.press("Escape")
        with page.expect_navigation():
            page.keyboard.press("g")
            page.keyboard.press("p")
        assert page.url.endswith("/disputed/")
        page.wait_for_function("() => window.htmx !== undefined")
        page.keyboard.press("?")
        dialog = page.locator("#keys-help")
        assert dialog.is_visible() and "g" in dialog.inner_text() and "Disputed" in dialog.inner_text()
    finally:
        context.close()
