"""The activity page and the strip above the inbox in a real browser, at
phone and desktop size, light and dark: every chart draws its data, fits the
screen, follows the colour scheme, and axe-core finds no serious violation;
the Accept-all confirm with flags too. Screenshots land in tests/artifacts/."""

from __future__ import annotations

import pytest

from reviews import actions
from tests import test_accessibility_browser as ax
from tests import test_inbox_browser as ib
from tests.conftest import content

pytestmark = ib.pytestmark
browser = ib.browser  # the module-scoped Chromium fixture


@pytest.fixture
def work(reviewer, agent, team_agent, make_record):
    """Proposals from two agents, some decided, one record due soon."""
    made = []
    for n in range(6):
        made.append(
            actions.propose_create(
                agent=agent if n % 2 else team_agent,
                reason="Noted during the week",
                **content(title=f"Deploy fact {n}", body=f"The billing API deploy fact {n} holds for the team."),
            )
        )
    actions.accept_proposal(made[0], actor=reviewer)
    actions.accept_proposal(made[1], actor=reviewer)
    actions.reject_proposal(made[2], actor=reviewer, note="Not needed")
    make_record(title="Due soon", body="This record falls due for review soon, in the next weeks.")
    return made


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_activity_charts_render_with_data_and_pass_axe(browser, live_server, work, size, scheme):
    context, page = ax.new_page(browser, live_server, size, scheme)
    try:
        strip = page.locator("#activity-strip")
        if size == "phone":
            # The phone's first screen is for cards: no strip; Activity is in the navigation.
            assert not strip.is_visible()
            page.locator("header.site nav a", has_text="Activity").click()
        else:
            assert "3 waiting" in " ".join(strip.inner_text().split())
            strip.locator("a").click()
        page.wait_for_selector("h1:has-text('Activity')")
        for chart in ("proposed", "decided", "rates", "backlog", "ages", "due", "took"):
            box = page.locator(f"#chart-{chart}").bounding_box()
            assert box and box["width"] > 200 and box["height"] > 80, chart
        assert page.locator("#chart-proposed rect").count() >= 2  # two agents' bars today
        assert page.locator("#chart-rates circle").count() >= 2
        assert page.locator("#chart-ages rect").count() >= 1
        # The bars take their colour from the scheme (classes in site.css, no inline style).
        fill = page.evaluate("getComputedStyle(document.querySelector('#chart-proposed rect')).fill")
        assert fill == ("rgb(124, 196, 138)" if scheme == "dark" else "rgb(47, 109, 58)")
        assert page.locator("#table-ages").is_visible()
        page.locator("summary", has_text="The numbers per day").click()
        assert page.locator("#table-per-day").is_visible()
        ib.assert_fits(page, size)
        ib.shot(page, f"{size}-{scheme}-activity", full=True)
        ax.assert_no_serious(ax.axe_violations(page, f"activity, {size}, {scheme}"))
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_accept_all_confirm_with_flags_passes_axe(browser, live_server, agent, team_agent, size):
    for who, day in ((agent, "Tuesday"), (team_agent, "Thursday")):
        actions.propose_create(
            agent=who,
            reason="From the runbook",
            **content(title="Billing API deploy day", body=f"The billing API deploys to production every {day}."),
        )
    context, page = ax.new_page(browser, live_server, size, "light")
    try:
        page.goto(f"{live_server.url}/proposals/bulk-all?op=accept")
        flags = page.locator("#bulk-flags")
        flags.wait_for()
        assert "2 of 2 carry a flag" in " ".join(flags.inner_text().split())
        ib.assert_fits(page, size)
        ib.shot(page, f"{size}-accept-all-flags", full=True)
        ax.assert_no_serious(ax.axe_violations(page, f"accept all with flags, {size}"))
    finally:
        context.close()
