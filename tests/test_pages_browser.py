"""Every page of the review site at phone (390x844) and desktop (1440x900)
size: it answers, fits (no sideways scroll; 44 px tap targets on a phone), and
with VETTED_SCREENSHOTS=1 its first screen is saved to tests/artifacts/pages/
(committed: what each page looks like, issue 13's "Done when"). The saved
files change only when someone asks for them, not on every run."""

from __future__ import annotations

import os

import pytest

from reviews import actions
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
        scope="team",
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
