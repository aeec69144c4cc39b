"""The live inbox in Chromium: a proposal made while the inbox is open shows
up as "1 new proposal, show them" within 5 s, without a reload, and the nav
badge and the tab title follow."""

from __future__ import annotations

import time

import pytest

from reviews import actions
from tests.conftest import content
from tests.test_inbox_browser import CHROMIUM, browser, open_page  # noqa: F401 (browser is a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
if not CHROMIUM.exists():
    pytestmark.append(pytest.mark.skip(reason="/usr/bin/chromium is missing"))


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_new_proposal_shows_in_an_open_inbox_within_5_seconds(browser, live_server, reviewer, agent, size):  # noqa: F811
    actions.propose_create(
        agent=agent,
        reason="Seen in the repository",
        **content(title="Already waiting", body="The staging cluster restarts every Sunday night at three."),
    )
    context, page = open_page(browser, live_server, size)
    try:
        assert page.inner_text("#pending-count") == "1"
        assert page.locator("#live-inbox-show").count() == 0
        made = time.monotonic()
        actions.propose_create(
            agent=agent,
            reason="Seen in the repository",
            **content(title="Arrived while open", body="The billing export runs every weekday at six in the morning."),
        )
        page.wait_for_selector("#live-inbox-show", timeout=5_000)
        shown = time.monotonic() - made
        assert page.inner_text("#live-inbox-show") == "1 new proposal, show them"
        assert page.inner_text("#pending-count") == "2"
        assert page.title().startswith("(1 new) Inbox (2)")
        assert shown < 5.0
        assert "Arrived while open" not in page.content()  # no reload happened
        page.click("#live-inbox-show")
        page.wait_for_selector("text=Arrived while open")
        assert page.locator("#live-inbox-show").count() == 0
    finally:
        context.close()
