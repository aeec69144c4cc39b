"""Spaces in a real browser (issue 16), at phone and desktop size, with the
fixtures of tests/test_inbox_browser.py: two people deciding one proposal in
a space that needs two approvals, and moving a record between spaces from
its page. Screenshots land in tests/artifacts/."""

# ruff: noqa: F811  (test_inbox_browser.py's ``browser`` fixture, imported, is an argument)
from __future__ import annotations

import pytest

from reviews import actions
from reviews.models import Proposal, ProposalState, Record, RecordStatus
from tests.conftest import content
from tests.test_inbox_browser import SIZES, assert_fits, browser, pytestmark, shot  # noqa: F401  (fixture, marks)

PASSWORDS = {"rita": "a-long-password-1", "sam": "a-long-password-2", "olga": "a-long-password-3"}


def sign_in(browser, live_server, size, username, path="/"):
    context = browser.new_context(**SIZES[size])
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/accounts/login/?next={path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORDS[username])
    page.click("button[type=submit]")
    page.wait_for_selector("#pending-count")
    page.wait_for_load_state("load")
    page.wait_for_function("() => window.htmx !== undefined")
    return context, page


@pytest.fixture
def two_approvals(reviewer, django_user_model):
    """acme needs two approvals; rita owns it and the proposing agent, sam and
    olga review it. One pending proposal from rita's agent."""
    sam = django_user_model.objects.create_user("sam", password=PASSWORDS["sam"], is_staff=True)
    olga = django_user_model.objects.create_user("olga", password=PASSWORDS["olga"], is_staff=True)
    actions.create_space("acme", kind="team", name="Acme Corp", actor=reviewer)
    for person in (sam, olga):
        actions.add_member("acme", person, role="reviewer", actor=reviewer)
    actions.set_required_approvals("acme", 2, actor=reviewer)
    bot, _token = actions.create_agent("acme-bot", spaces=["acme"], actor=reviewer)
    proposal = actions.propose_create(
        agent=bot,
        reason="From the client handbook",
        **content(title="Acme deploy window", body="Acme deploys every Tuesday at 10:00 UTC.", space="acme"),
    )
    return proposal


def _accept(page, proposal):
    page.locator(f"#proposal-{proposal.pk}").get_by_role("button", name="Accept").first.click()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_two_people_accept_a_proposal_that_needs_two_approvals(browser, live_server, two_approvals, size):
    proposal = two_approvals
    card = f"#proposal-{proposal.pk}"

    # A (sam) accepts: the card says 1 of 2, and the proposal stays pending.
    context, page = sign_in(browser, live_server, size, "sam")
    try:
        _accept(page, proposal)
        # textContent: the badge is drawn in capitals (CSS), innerText would be too.
        page.wait_for_function(f"() => document.querySelector('{card}').textContent.includes('1 of 2 approvals')")
        page.goto(f"{live_server.url}/")
        assert "1 of 2 approvals: accepted by sam" in page.text_content(card)
        assert Proposal.objects.get(pk=proposal.pk).state == ProposalState.PENDING
        assert_fits(page, size)
        shot(page, f"{size}-two-approvals-first")
        # A cannot accept again: Accept is no longer offered, and the card says why.
        page.wait_for_function("() => document.body.innerText.includes('You already accepted')")
        assert page.locator(card).get_by_role("button", name="Accept").count() == 0
        assert "Next approval from: olga" in page.text_content(card)
        assert Proposal.objects.get(pk=proposal.pk).state == ProposalState.PENDING
    finally:
        context.close()

    # The proposing agent's owner (rita) is refused.
    context, page = sign_in(browser, live_server, size, "rita")
    try:
        assert "1 of 2 approvals" in page.text_content(card)
        # Accept is not offered to the agent's person; the card says why.
        page.wait_for_function("() => document.body.innerText.includes('you own agent')")
        assert page.locator(card).get_by_role("button", name="Accept").count() == 0
        assert Proposal.objects.get(pk=proposal.pk).state == ProposalState.PENDING
    finally:
        context.close()

    # B (olga) accepts: the record is true.
    context, page = sign_in(browser, live_server, size, "olga")
    try:
        _accept(page, proposal)
        page.wait_for_selector(f"{card}.decided")
        assert "accepted" in page.inner_text(card).lower()
        assert_fits(page, size)
        shot(page, f"{size}-two-approvals-second")
    finally:
        context.close()
    done = Proposal.objects.select_related("result_record").get(pk=proposal.pk)
    assert done.state == ProposalState.ACCEPTED
    assert done.result_record.status == RecordStatus.APPROVED and done.result_record.space == "acme"


@pytest.fixture
def movable(reviewer, django_user_model, make_record):
    """A team record rita may move; "acme" is sam's space (rita is not a member)."""
    sam = django_user_model.objects.create_user("sam", password=PASSWORDS["sam"], is_staff=True)
    actions.create_space("acme", kind="team", name="Acme Corp", actor=sam)
    return make_record(title="Release checklist", body="Tag the release, then announce it in the channel.")


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_move_a_record_to_another_space_from_its_page(browser, live_server, movable, size):
    record = movable
    context, page = sign_in(browser, live_server, size, "rita", path=f"/records/{record.public_id}/")
    try:
        page.goto(f"{live_server.url}/records/{record.public_id}/")
        page.locator(f"#move-{record.public_id} summary").click()
        options = page.locator(f"#move-{record.public_id} select[name=space] option").all_inner_texts()
        assert record.space not in options and "acme" not in options and "system" in options
        assert_fits(page, size)
        shot(page, f"{size}-record-move")
        page.select_option(f"#move-{record.public_id} select[name=space]", "system")
        page.fill(f"#move-{record.public_id} input[name=note]", "Everyone's agents need it")
        page.locator(f"#move-{record.public_id}").get_by_role("button", name="Move").click()
        page.wait_for_function("() => document.body.innerText.includes('Moved to system')")
        moved = Record.objects.get(supersedes=record)
        assert page.url.endswith(f"/records/{moved.public_id}/")
        assert moved.space == "system" and moved.status == RecordStatus.APPROVED
        assert Record.objects.get(pk=record.pk).status == RecordStatus.SUPERSEDED
    finally:
        context.close()
