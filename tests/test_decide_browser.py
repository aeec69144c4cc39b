"""Deciding without a wrong decision by habit, in real Chromium at phone and
desktop size: the dispute vocabulary on the inbox and on /disputed/, keys
that cannot retire in one press, and Undo (toast, key u, without JS)."""

from __future__ import annotations

import pytest

from reviews import actions
from reviews.models import Proposal, ProposalState, Record, RecordStatus
from tests import test_inbox_browser as base
from tests.test_inbox_browser import assert_fits, card, open_page, shot, wait_decided, wait_for_hints

pytestmark = base.pytestmark
# The browser and the three seeded proposals, shared with the inbox's browser tests.
browser = base.browser
seeded = base.seeded
page_without_js = base.page_without_js

LABELS = ("Keep record…", "Correct record…", "Retire record…")


@pytest.fixture
def disputed_pair(agent, make_record):
    one = make_record(title="Payment provider", body="Card payments go through acme-pay, configured in billing-api.")
    two = make_record(title="Office wifi", body="The office wifi is called acme-guest and its password is on the wall.")
    d1 = actions.dispute_record(one, agent=agent, reason="We changed provider in May; see the finance wiki")
    d2 = actions.dispute_record(two, agent=agent, reason="The network was renamed last week")
    return {"one": one, "two": two, "d1": d1, "d2": d2}


def status(record) -> str:
    return Record.objects.get(pk=record.pk).status


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_disputes_read_the_same_on_the_inbox_and_disputed_and_no_key_retires_in_one_press(
    browser, live_server, disputed_pair, size
):
    one, two = disputed_pair["one"], disputed_pair["two"]
    context, page = open_page(browser, live_server, size)
    try:
        first = card(page, disputed_pair["d1"])
        for label in LABELS:
            assert first.get_by_text(label, exact=True).is_visible(), label
        assert "Accept: retire" not in page.content()
        assert_fits(page, size)
        shot(page, f"{size}-decide-inbox-dispute")

        # Habit keys do nothing on a dispute card; t only opens the confirm step.
        page.keyboard.press("j")
        page.wait_for_selector(f"#proposal-{disputed_pair['d1'].pk}.current")
        page.keyboard.press("a")
        page.keyboard.press("r")
        page.wait_for_selector("#request-error:not([hidden])")  # the hint names the dispute keys
        page.keyboard.press("Escape")
        page.keyboard.press("t")
        page.wait_for_selector(f"#proposal-{disputed_pair['d1'].pk} details[data-decision=retire][open]")
        assert status(one) == RecordStatus.DISPUTED  # still: one key did not retire it
        shot(page, f"{size}-decide-retire-confirm")
        page.keyboard.press("Enter")  # the confirm step (focus is in its note)
        wait_decided(page, disputed_pair["d1"], "Accepted")
        assert status(one) == RecordStatus.RETIRED

        # /disputed/: the same words and the same keys (s keeps).
        page.goto(f"{live_server.url}/disputed/")
        row = page.locator(f"#record-{two.pk}")
        for label in LABELS:
            assert row.get_by_text(label, exact=True).is_visible(), label
        assert "Clear dispute" not in page.content()
        assert_fits(page, size)
        shot(page, f"{size}-decide-disputed")
        page.keyboard.press("j")
        page.wait_for_selector(f"#record-{two.pk}.current")
        page.keyboard.press("t")
        page.wait_for_selector(f"#record-{two.pk} details[data-decision=retire][open]")
        assert status(two) == RecordStatus.DISPUTED
        page.keyboard.press("Escape")  # leaves the note
        page.keyboard.press("s")
        page.wait_for_selector(f"#record-{two.pk} details[data-decision=keep][open]")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#record-{two.pk}.decided")
        assert status(two) == RecordStatus.APPROVED
        page.wait_for_selector("#undo-toast")
        assert "Kept record: Office wifi." in page.inner_text("#undo-toast")
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_undo_by_the_toast_and_by_u(browser, live_server, seeded, size):
    context, page = open_page(browser, live_server, size)
    first, third = seeded["first"], seeded["third"]
    try:
        card(page, first).get_by_role("button", name="Accept").click()
        wait_decided(page, first, "Accepted")
        toast = page.locator("#undo-toast")
        toast.wait_for(state="visible")
        assert "Accepted: Staging database host." in toast.inner_text()
        assert_fits(page, size)
        shot(page, f"{size}-decide-undo-toast")
        toast.get_by_role("button", name="Undo").click()
        page.wait_for_selector(f"#proposal-{first.pk}:not(.decided)")
        page.wait_for_selector("text=Undone: Staging database host.")
        assert Proposal.objects.get(pk=first.pk).state == ProposalState.PENDING

        # By keyboard: decide, then u.
        page.wait_for_function("() => window.htmx !== undefined")
        page.locator(f"#proposal-{third.pk}").click(position={"x": 5, "y": 5})
        wait_for_hints(page, third.pk)
        page.keyboard.press("a")
        wait_decided(page, third, "Accepted")
        page.wait_for_selector("#undo-toast")
        page.keyboard.press("u")
        page.wait_for_selector("text=Undone: Friday deploys.")
        page.wait_for_selector(f"#proposal-{third.pk}:not(.decided)")
        assert Proposal.objects.get(pk=third.pk).state == ProposalState.PENDING
        made = Record.objects.filter(title="Friday deploys").get()
        assert made.status == RecordStatus.RETIRED  # kept, retired as undone
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_undo_without_javascript(seeded, live_server, page_without_js, size):
    page, first = page_without_js, seeded["first"]
    card(page, first).get_by_role("button", name="Accept").click()
    toast = page.locator("#undo-toast")
    toast.wait_for(state="visible")
    assert "Accepted: Staging database host." in toast.inner_text()
    assert page.url.endswith(f"#proposal-{seeded['revision'].pk}")  # at the next card, not the top
    shot(page, f"{size}-decide-nojs-toast")
    toast.get_by_role("button", name="Undo").click()
    page.wait_for_selector("text=Undone: Staging database host.")
    assert Proposal.objects.get(pk=first.pk).state == ProposalState.PENDING
    # Recent decisions shows it undone.
    page.goto(f"{live_server.url}/decisions/")
    assert "Undone." in page.inner_text("ol.decisions")
    assert_fits(page, size)
    shot(page, f"{size}-decide-recent", full=True)


def test_the_toast_goes_once_undo_would_be_refused(browser, live_server, seeded, settings):
    settings.VETTED_UNDO_SECONDS = 2
    context, page = open_page(browser, live_server, "phone")
    first = seeded["first"]
    try:
        card(page, first).get_by_role("button", name="Accept").click()
        wait_decided(page, first, "Accepted")
        page.wait_for_selector("#undo-toast", state="visible")
        page.wait_for_selector("#undo-toast", state="hidden", timeout=6_000)
        page.keyboard.press("u")  # nothing to press any more
        page.wait_for_timeout(300)
        assert Proposal.objects.get(pk=first.pk).state == ProposalState.ACCEPTED
    finally:
        context.close()
