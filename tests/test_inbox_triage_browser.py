"""Triage on the inbox in a real browser (issue 13 §2), phone and desktop:
every filter through the UI, the compact list (≥6 proposals inside the
first phone screen, one-tap accept), and `j` past the 25th card.
Screenshots: tests/artifacts/{phone,desktop}-inbox-{compact,filtered}.png."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from reviews import actions
from reviews.models import Proposal, ProposalState
from tests.conftest import GOOD_BODY, content
from tests.test_inbox_browser import (  # noqa: F401  # fixture, marks
    assert_fits,
    browser,
    choose_view,
    open_page,
    pytestmark,
    shot,
    wait_for_hints,
)


@pytest.fixture
def triage_seed(agent, team_agent, make_record):
    """30 creates (24 from claude-code, 6 decisions from team-bot), a
    retirement and two disputes: more than one page (25)."""
    made: dict[str, Any] = {"creates": [], "disputes": []}
    for n in range(24):
        made["creates"].append(
            actions.propose_create(
                agent=agent,
                reason="Seen in the repository",
                **content(title=f"Service {n} runs on port {8000 + n}", body=f"{GOOD_BODY} Port {8000 + n}."),
            )
        )
    for n in range(6):
        made["creates"].append(
            actions.propose_create(
                agent=team_agent,
                reason="Agreed in the planning meeting",
                **content(
                    title=f"Team decision {n}", body=f"{GOOD_BODY} Decision {n}.", kind="decision", tags=["planning"]
                ),
            )
        )
    old = make_record(title="Legacy cron host", body=f"{GOOD_BODY} Cron.", tags=["ops"])
    made["retire"] = actions.propose_retirement(old, agent=agent, reason="The cron host was switched off")
    for n in range(2):
        record = make_record(title=f"Staging host {n}", body=f"{GOOD_BODY} Staging {n}.", tags=["staging"])
        made["disputes"].append(actions.dispute_record(record, agent=team_agent, reason="Renamed this week"))
    # Oldest first in creation order, a minute apart (the sorts are by time).
    everything = [*made["creates"], made["retire"], *made["disputes"]]
    for n, proposal in enumerate(everything):
        Proposal.objects.filter(pk=proposal.pk).update(created_at=timezone.now() - timedelta(minutes=100 - n))
    return made


def listed(page) -> list[int]:
    ids = page.eval_on_selector_all("#cards [data-card]", "els => els.map(e => e.id)")
    return [int(i.removeprefix("proposal-")) for i in ids]


def wait_url(page, fragment):
    page.wait_for_function("f => decodeURIComponent(location.search.replace(/\\+/g, ' ')).includes(f)", arg=fragment)


def settle(page):
    """Wait for htmx to finish swapping (no request in flight, no settling class)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")


def open_filters(page):
    details = page.locator("details.more-filters")
    if details.get_attribute("open") is None:
        details.locator("summary").click()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_every_filter_through_the_ui(browser, live_server, triage_seed, size):  # noqa: F811
    context, page = open_page(browser, live_server, size)
    try:
        # Disputes first by default.
        assert listed(page)[:2] == [d.pk for d in triage_seed["disputes"]]
        assert page.inner_text("#match-count").startswith("33")

        page.locator("nav.chips a", has_text="Dispute").click()
        wait_url(page, "action=dispute")
        settle(page)
        assert listed(page) == [d.pk for d in triage_seed["disputes"]]
        page.locator("nav.chips a", has_text="Retire").click()
        wait_url(page, "action=retire")
        settle(page)
        assert listed(page) == [triage_seed["retire"].pk]
        page.locator("nav.chips a", has_text="Create").click()
        wait_url(page, "action=create")
        settle(page)
        assert len(listed(page)) == 25  # a page of the 30 creates

        open_filters(page)
        page.select_option("select[name=agent]", "team-bot")
        wait_url(page, "agent=team-bot")
        settle(page)
        team = [p.pk for p in triage_seed["creates"][24:]]
        assert listed(page) == team
        assert "team-bot (6)" in page.inner_text("select[name=agent]")

        open_filters(page)
        page.select_option("select[name=kind]", "decision")
        wait_url(page, "kind=decision")
        settle(page)
        open_filters(page)
        page.select_option("select[name=space]", "team")
        wait_url(page, "space=team")
        settle(page)
        open_filters(page)
        page.select_option("select[name=tag]", "planning")
        wait_url(page, "tag=planning")
        settle(page)
        assert listed(page) == team

        open_filters(page)
        page.select_option("select[name=sort]", "newest")
        wait_url(page, "sort=newest")
        settle(page)
        assert listed(page) == list(reversed(team))

        open_filters(page)
        page.fill("input[name=q]", "decision 3")
        page.press("input[name=q]", "Enter")
        wait_url(page, "q=decision 3")
        settle(page)
        assert listed(page) == [triage_seed["creates"][27].pk]
        assert_fits(page, size)
        shot(page, f"{size}-inbox-filtered")

        # The address is a bookmark: loading it again gives the same list.
        page.goto(page.url)
        assert listed(page) == [triage_seed["creates"][27].pk]
        # A chip removes its filter.
        page.locator("nav.chips a.chip.on", has_text="q: decision 3").click()
        settle(page)
        assert len(listed(page)) == 6
        # A bad value in a bookmark: a clear message, not an empty list.
        page.goto(f"{live_server.url}/?action=delete")
        assert "is not one of: create, revise, retire, dispute" in page.inner_text("#filter-errors")
    finally:
        context.close()


def compact_settled(page, size) -> None:
    """At desktop size the first line opens in the detail pane by itself
    (inbox-fast); count lines once that swap is done, not in the middle of it."""
    if size == "desktop":
        page.wait_for_selector("#cards .card:not(.line):not(.decided)")
        page.wait_for_load_state("networkidle")
        page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")


def fully_visible_lines(page) -> int:
    return page.evaluate("""() => {
        const h = window.innerHeight;
        return [...document.querySelectorAll('#cards [data-card]')].filter(el => {
            const r = el.getBoundingClientRect();
            return r.top >= 0 && r.bottom <= h && r.height > 0;
        }).length;
    }""")


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_compact_view_fits_many_proposals_and_accepts_in_one_tap(browser, live_server, triage_seed, size):  # noqa: F811
    context, page = open_page(browser, live_server, size)
    try:
        choose_view(page, live_server.url, "compact")
        page.wait_for_selector("#cards .card.line")
        compact_settled(page, size)
        assert_fits(page, size)
        visible = fully_visible_lines(page)
        assert visible >= 6, f"only {visible} proposals inside the first {size} screen"
        # For the report: how much of the first screen the head (site header to the first line) takes.
        head = page.evaluate("document.querySelector('#cards [data-card]').getBoundingClientRect().top")
        tiles = page.evaluate("document.querySelector('#triage-filters').getBoundingClientRect().top")
        print(
            f"{size}: {visible} proposals fully inside the first screen; above the first: {head:.0f} px, "
            f"of which site header, heading and counts {tiles:.0f} px"
        )
        shot(page, f"{size}-inbox-compact")
        # Remembered: the plain inbox address shows the compact list again.
        page.goto(live_server.url + "/")
        page.wait_for_selector("#cards .card.line")

        # One tap accepts a create.
        first = triage_seed["creates"][0]
        wait_for_hints(page, first.pk)  # the one tap is held until the line's flag has come
        page.locator(f"#proposal-{first.pk}").get_by_role("button", name="Accept").click()
        page.wait_for_selector(f"#proposal-{first.pk}.decided")
        assert Proposal.objects.get(pk=first.pk).state == ProposalState.ACCEPTED
        # A dispute line has no one-tap decision: "Review…" expands it in place into the full card.
        dispute = triage_seed["disputes"][0]
        line = page.locator(f"#proposal-{dispute.pk}")
        assert line.get_by_role("button", name="Accept").count() == 0
        line.get_by_role("link", name="Review…").click()
        page.wait_for_selector(f"#proposal-{dispute.pk} .reason")
        assert "Renamed this week" in page.inner_text(f"#proposal-{dispute.pk}")
        assert Proposal.objects.get(pk=dispute.pk).state == ProposalState.PENDING
        # Tapping a title expands that line too.
        second = triage_seed["creates"][1]
        page.locator(f"#proposal-{second.pk} a.line-main").click()
        page.wait_for_selector(f"#proposal-{second.pk} .reason")
        assert_fits(page, size)
    finally:
        context.close()


def test_compact_line_expands_without_javascript(browser, live_server, triage_seed):  # noqa: F811
    from tests.test_inbox_browser import PASSWORD, SIZES

    context = browser.new_context(java_script_enabled=False, **SIZES["phone"])
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "rita")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        choose_view(page, live_server.url, "compact")
        dispute = triage_seed["disputes"][0]
        page.locator(f"#proposal-{dispute.pk}").get_by_role("link", name="Review…").click()
        assert re.search(rf"expand={dispute.pk}", page.url)
        assert "Renamed this week" in page.inner_text(f"#proposal-{dispute.pk}")
        # Filters without JS: the GET form.
        page.locator("details.more-filters summary").click()
        page.select_option("select[name=agent]", "team-bot")
        page.get_by_role("button", name="Apply").click()
        assert "agent=team-bot" in page.url
        assert len(listed(page)) == 8  # 6 decisions and 2 disputes
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_j_past_the_25th_card_loads_more(browser, live_server, triage_seed, size):  # noqa: F811
    context, page = open_page(browser, live_server, size)
    try:
        assert len(listed(page)) == 25
        for _ in range(25):
            page.keyboard.press("j")
        order = listed(page)
        page.wait_for_selector(f"#proposal-{order[24]}.current")
        page.keyboard.press("j")
        page.wait_for_function("() => document.querySelectorAll('#cards [data-card]').length === 33")
        order = listed(page)
        page.wait_for_selector(f"#proposal-{order[25]}.current")
        page.keyboard.press("j")
        page.wait_for_selector(f"#proposal-{order[26]}.current")
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_reject_all_that_match_through_the_ui(browser, live_server, triage_seed, size):  # noqa: F811
    context, page = open_page(browser, live_server, size)
    try:
        page.goto(f"{live_server.url}/?agent=team-bot&action=create")
        assert page.inner_text("#match-count").startswith("6")
        page.get_by_role("link", name="Reject all…").click()
        page.wait_for_selector("#bulk-confirm")
        assert "Reject 6 proposals?" in page.inner_text("#bulk-confirm")
        assert_fits(page, size)
        page.click("#bulk-all-confirm")
        page.wait_for_selector("#undo-toast")  # the decision's message, with Undo
        assert "agent=team-bot" in page.url  # back where the reviewer was
        team = [p.pk for p in triage_seed["creates"][24:]]
        assert set(Proposal.objects.filter(pk__in=team).values_list("state", flat=True)) == {ProposalState.REJECTED}
        others = [p.pk for p in triage_seed["creates"][:24]] + [d.pk for d in triage_seed["disputes"]]
        assert set(Proposal.objects.filter(pk__in=others).values_list("state", flat=True)) == {ProposalState.PENDING}
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_compact_view_keeps_six_lines_in_the_first_screen_despite_burst_warnings(
    browser,  # noqa: F811
    live_server,
    triage_seed,
    agent,
    team_agent,
    make_record,
    settings,
    size,
):
    # inbox-close: two agents each disputing or retiring records in a burst
    # (the bench seed's mix) put a warning each at the top of the inbox.
    settings.VETTED_OPEN_DISPUTES_PER_AGENT = 0
    for n in range(3):
        actions.dispute_record(
            make_record(title=f"Queue host {n}", body=f"{GOOD_BODY} Queue {n}."), agent=agent, reason="The queue moved"
        )
        actions.propose_retirement(
            make_record(title=f"Old box {n}", body=f"{GOOD_BODY} Box {n}."), agent=team_agent, reason="Switched off"
        )
    context, page = open_page(browser, live_server, size)
    try:
        choose_view(page, live_server.url, "compact")
        page.wait_for_selector("#cards .card.line")
        compact_settled(page, size)
        visible = fully_visible_lines(page)
        assert visible >= 6, f"only {visible} proposals inside the first {size} screen with the burst warnings"
        warnings = page.locator("#dispute-warnings")
        assert "2 agents" in warnings.inner_text()
        # One tap opens the summary: each agent's warning in full.
        warnings.locator("summary").click()
        assert f"Agent {agent.name} disputed" in warnings.inner_text()
        assert f"Agent {team_agent.name} proposed to retire" in warnings.inner_text()
        assert_fits(page, size)
        # The card view folds them too (open, they filled the first phone screen).
        page.goto(f"{live_server.url}/?view=cards")
        assert page.locator("#dispute-warnings details[open]").count() == 0
    finally:
        context.close()
