"""Undo of every kind of decision in real Chromium, phone and desktop (issue
13 §1): reject with a note, accept a revision, retire a record, keep a
disputed record, correct it, a bulk accept, and a retirement without
JavaScript. Each is decided on the inbox, undone from its toast, and the
database is checked to be as before: the proposal pending, the target as it
was, a produced record retired as undone."""

from __future__ import annotations

import re

import pytest

from reviews import actions
from reviews.models import Proposal, ProposalState, Record, RecordStatus
from tests import test_inbox_browser as base
from tests.conftest import content
from tests.test_inbox_browser import card, open_page

pytestmark = base.pytestmark
browser = base.browser  # the module's Chromium fixture
page_without_js = base.page_without_js
UNDO = re.compile("^Undo")


@pytest.fixture
def kinds(agent, team_agent, make_record):
    revised = make_record(title="Deploy checklist", body="Watch the error rate for ten minutes after a deploy.")
    retiring = make_record(title="Old VPN host", body="The VPN lives at vpn-old.internal.")
    kept = make_record(title="Payment provider", body="Card payments go through acme-pay.")
    corrected = make_record(title="Office wifi", body="The office wifi is called acme-guest.")

    def create(n):
        return actions.propose_create(
            agent=agent,
            reason="Read in the handbook",
            **content(title=f"Handbook fact {n}", body=f"The handbook says fact number {n} holds for every team."),
        )

    return {
        "reject": create(1),
        "bulk": [create(2), create(3)],
        "revision": actions.propose_revision(
            revised, agent=agent, reason="Fifteen now", body=revised.body.replace("ten", "fifteen")
        ),
        "retirement": actions.propose_retirement(retiring, agent=agent, reason="Switched off"),
        "keep": actions.dispute_record(kept, agent=team_agent, reason="We changed provider"),
        "correct": actions.dispute_record(corrected, agent=team_agent, reason="Renamed last week"),
    }


def state(proposal) -> str:
    return Proposal.objects.get(pk=proposal.pk).state


def status(record) -> str:
    return Record.objects.get(pk=record.pk).status


def undo_from_the_toast(page, *decided):
    for proposal in decided:
        page.wait_for_selector(f"#proposal-{proposal.pk}.decided")
    toast = page.locator("#undo-toast")
    toast.wait_for(state="visible")
    with page.expect_navigation():  # the toast's Undo is a plain form
        toast.get_by_role("button", name=UNDO).click()
    page.wait_for_selector("text=Undone")
    for proposal in decided:
        page.wait_for_selector(f"#proposal-{proposal.pk}:not(.decided)")
        assert state(proposal) == ProposalState.PENDING


def confirm(box, decision: str, note: str = ""):
    step = box.locator(f"details[data-decision={decision}]")
    step.locator("summary").click()
    if note:
        step.locator("input[name=note]").fill(note)
    step.locator("button[type=submit]").click()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_every_kind_of_decision_is_undone_from_its_toast(browser, live_server, kinds, size):
    context, page = open_page(browser, live_server, size)
    try:
        page.goto(f"{live_server.url}/?view=cards")
        page.wait_for_function("() => window.htmx !== undefined")

        rejected = kinds["reject"]
        box = card(page, rejected)
        box.locator("details.reject summary").click()
        box.locator("input[name=note]").fill("Already covered")
        box.locator("details.reject button[type=submit]").click()
        undo_from_the_toast(page, rejected)
        assert not Record.objects.filter(title=rejected.title).exists()

        revision = kinds["revision"]
        card(page, revision).get_by_role("button", name="Accept").click()
        undo_from_the_toast(page, revision)
        assert status(revision.target) == RecordStatus.APPROVED  # no longer superseded
        made = Record.objects.exclude(pk=revision.target_id).get(title="Deploy checklist")
        assert made.status == RecordStatus.RETIRED  # kept, retired as undone

        retirement = kinds["retirement"]
        confirm(card(page, retirement), "retire")
        undo_from_the_toast(page, retirement)
        assert status(retirement.target) == RecordStatus.APPROVED

        kept = kinds["keep"]
        confirm(card(page, kept), "keep", note="Still acme-pay")
        undo_from_the_toast(page, kept)
        assert status(kept.target) == RecordStatus.DISPUTED  # as it was

        corrected = kinds["correct"]
        card(page, corrected).locator("[data-decision=correct]").first.click()
        body = page.locator(f"#proposal-{corrected.pk} textarea[name=body]")
        body.fill("The office wifi is called acme-staff.")
        page.locator(f"#proposal-{corrected.pk} button[data-decision=correct]").click()
        undo_from_the_toast(page, corrected)
        assert status(corrected.target) == RecordStatus.DISPUTED
        assert Record.objects.get(body="The office wifi is called acme-staff.").status == RecordStatus.RETIRED

        first, second = kinds["bulk"]
        for proposal in (first, second):
            card(page, proposal).locator("label.check").click()
        with page.expect_navigation():  # the bulk bar is a plain form
            page.locator("#bulk").get_by_role("button", name="Accept selected").click()
        # The two are alike (flagged): the server asks first, then "flagged included" accepts both.
        page.wait_for_selector("#bulk-held")
        assert state(first) == state(second) == ProposalState.PENDING
        with page.expect_navigation():
            page.click("#bulk-all-confirm")
        assert state(first) == state(second) == ProposalState.ACCEPTED
        toast = page.locator("#undo-toast")
        assert toast.get_by_role("button", name="Undo all 2").is_visible()
        with page.expect_navigation():
            toast.get_by_role("button", name=UNDO).click()
        page.wait_for_selector("text=Undone")
        assert state(first) == state(second) == ProposalState.PENDING
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_retire_record_is_undone_without_javascript(kinds, live_server, page_without_js, size):
    page, retirement = page_without_js, kinds["retirement"]
    page.goto(f"{live_server.url}/?view=cards")
    confirm(card(page, retirement), "retire")
    page.locator("#undo-toast").wait_for(state="visible")
    assert status(retirement.target) == RecordStatus.RETIRED
    page.locator("#undo-toast").get_by_role("button", name=UNDO).click()
    page.wait_for_selector("text=Undone")
    assert state(retirement) == ProposalState.PENDING
    assert status(retirement.target) == RecordStatus.APPROVED
