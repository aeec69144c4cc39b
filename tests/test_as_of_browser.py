"""The records page's "As an agent saw it on a date", in real Chromium at
phone and desktop size: pick a date and an agent, see what it received then."""

from __future__ import annotations

import pytest

from reviews.models import Agent
from tests.test_as_of import NEW_BODY, OLD_BODY, build_history
from tests.test_inbox_browser import assert_fits, browser, open_page, pytestmark, shot  # noqa: F401

pytestmark = pytestmark  # browser (and skipped where Chromium is missing), as the inbox tests


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_pick_a_date_and_an_agent_and_see_what_it_received_then(browser, live_server, reviewer, agent, size):  # noqa: F811
    past = build_history(reviewer, Agent.objects.get(name=agent.name))
    context, page = open_page(browser, live_server, size)
    try:
        page.goto(f"{live_server.url}/records/")
        page.click("#as-of-link")
        page.fill("input[name=as_of]", "2026-03-03")
        page.select_option("select[name=agent]", agent.name)
        page.click("#as-of-form button[type=submit]")
        results = page.locator("#as-of-results")
        results.wait_for()
        assert OLD_BODY[:40] in results.inner_text() and NEW_BODY[:40] not in results.inner_text()
        assert page.locator(f"#as-of-{past.v1.public_id}").is_visible()
        assert_fits(page, size)
        shot(page, f"as-of-{size}")
        page.fill("input[name=as_of]", "2026-03-06")
        page.click("#as-of-form button[type=submit]")
        page.locator(f"#as-of-{past.v2.public_id}").wait_for()
        assert page.locator(f"#as-of-{past.v1.public_id}").count() == 0
    finally:
        context.close()
