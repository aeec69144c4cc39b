"""The hint keys and the compact list's flags in a real browser (fixtures
and helpers from tests/test_inbox_browser.py): ``m`` merges a create into a
revision of the close record its hint names, ``d`` rejects a proposal as a
duplicate of its close match, and on a card that offers neither they say so
and change nothing. A compact line fetches its flags and holds its one-tap
Accept (and ``a``) until they come; the checkbox bar holds while a selected
proposal's hints load."""

from __future__ import annotations

from typing import Any

import pytest

from reviews import actions
from reviews.models import AuditEvent, Proposal, ProposalAction, ProposalState
from tests import test_inbox_browser as ib
from tests.conftest import content

pytestmark = ib.pytestmark
browser = ib.browser  # the module-scoped Chromium fixture

PG15: dict[str, Any] = {
    "title": "Postgres 15 is used in production",
    "body": "The billing cluster runs Postgres 15 in production; upgrades go through the platform team.",
    "tags": ["postgres", "production"],
}
STAGING: dict[str, Any] = {
    "title": "Staging database host",
    "body": "Staging uses db-staging.internal on port 5433; credentials are in the vault under staging/db.",
    "tags": ["staging", "database"],
}
PLANTS: dict[str, Any] = {
    "title": "Office plants",
    "body": "The office plants are watered on Mondays by whoever arrives first.",
    "tags": ["office"],
}


def _only(page, live_server, words: str, pk: int) -> None:
    """The inbox filtered to one proposal (its words), its hints in."""
    page.goto(f"{live_server.url}/?view=cards&q={words.replace(' ', '+')}")
    page.wait_for_function("() => window.htmx !== undefined")
    assert page.locator("[data-card]").count() == 1
    ib.wait_for_hints(page, pk)


def _said(page) -> str:
    box = page.locator("#request-error")
    box.wait_for(state="visible")
    return box.inner_text()


def test_m_merges_d_rejects_as_duplicate_and_a_card_with_neither_says_so(browser, live_server, agent, make_record):
    approved = make_record(**PG15)
    staging = make_record(**STAGING)
    upgrade = actions.propose_create(
        agent=agent,
        reason="Saw it in the runbook",
        **content(
            title="Postgres 16 is now used in production",
            body="The billing cluster now runs Postgres 16 in production; upgrades go through the platform team.",
            tags=["postgres", "production"],
        ),
    )
    # The same fact, worded a little differently (an identical text is refused at the door).
    again = actions.propose_create(
        agent=agent,
        reason="From the wiki",
        **content(**{**STAGING, "body": STAGING["body"].replace("Staging uses", "The staging setup uses")}),
    )
    plants = actions.propose_create(agent=agent, reason="Told by the user", **content(**PLANTS))
    context, page = ib.open_page(browser, live_server, "desktop")
    try:
        # A create that contradicts a close record: it may become its revision (m), never its duplicate (d).
        _only(page, live_server, "Postgres 16", upgrade.pk)
        page.keyboard.press("d")
        assert "No reject as duplicate on this card" in _said(page)
        assert Proposal.objects.get(pk=upgrade.pk).state == ProposalState.PENDING
        page.keyboard.press("m")
        page.wait_for_selector(f"#proposal-{upgrade.pk} .diff")
        merged = Proposal.objects.get(pk=upgrade.pk)
        assert merged.action == ProposalAction.REVISE and merged.target_id == approved.pk
        assert merged.state == ProposalState.PENDING  # a revision to review, not a decision

        # The same text as an approved record: d rejects it as that record's duplicate.
        _only(page, live_server, "Staging database", again.pk)
        page.keyboard.press("d")
        page.wait_for_function(f"() => document.querySelector('#proposal-{again.pk}').classList.contains('decided')")
        rejected = Proposal.objects.get(pk=again.pk)
        assert rejected.state == ProposalState.REJECTED
        event = AuditEvent.objects.get(event_type="proposal.rejected", proposal_ref=again.public_id)
        assert event.extra["duplicate_of"] == staging.public_id

        # Nothing close: both keys say so and nothing changes.
        _only(page, live_server, "Office plants", plants.pk)
        page.keyboard.press("m")
        assert "No merge on this card" in _said(page)
        page.keyboard.press("d")
        assert "No reject as duplicate on this card" in _said(page)
        assert Proposal.objects.get(pk=plants.pk).state == ProposalState.PENDING
        assert Proposal.objects.get(pk=plants.pk).action == ProposalAction.CREATE
    finally:
        context.close()


def test_a_compact_line_shows_its_flag_and_holds_accept_until_it_comes(browser, live_server, agent, make_record):
    make_record(**PG15)
    upgrade = actions.propose_create(
        agent=agent,
        reason="Saw it in the runbook",
        **content(
            title="Postgres 16 is now used in production",
            body="The billing cluster now runs Postgres 16 in production; upgrades go through the platform team.",
            tags=["postgres", "production"],
        ),
    )
    context, page = ib.open_page(browser, live_server, "phone")
    held: list = []
    try:
        page.route("**/similar*", lambda route: held.append(route))
        page.goto(f"{live_server.url}/?view=compact")
        page.wait_for_function("() => window.htmx !== undefined")
        line = page.locator(f"#proposal-{upgrade.pk}")
        page.wait_for_function("() => document.querySelector('.line-flags[data-hints=\"loading\"]') !== null")
        line.get_by_role("button", name="Accept").tap()
        note = line.locator("[data-hints-note]")
        note.wait_for()
        assert "still loading" in note.inner_text()
        page.keyboard.press("a")
        assert Proposal.objects.get(pk=upgrade.pk).state == ProposalState.PENDING
        for route in held:
            route.continue_()
        page.unroute("**/similar*")
        flag = line.locator(".line-flags .flag")
        flag.wait_for()
        assert "Postgres 16" in line.inner_text()  # the flag fills its slot, not the line
        assert "⚠" in flag.inner_text() and "contradiction" in flag.inner_text()
        ib.assert_fits(page, "phone")
        line.get_by_role("button", name="Accept").tap()
        page.wait_for_function(f"() => document.querySelector('#proposal-{upgrade.pk}').classList.contains('decided')")
        assert Proposal.objects.get(pk=upgrade.pk).state == ProposalState.ACCEPTED
    finally:
        context.close()


@pytest.mark.parametrize("size", ["desktop"])
def test_the_bulk_bar_holds_while_a_selected_hint_loads_and_the_server_asks_about_flags(
    browser, live_server, agent, make_record, size
):
    make_record(**PG15)
    upgrade = actions.propose_create(
        agent=agent,
        reason="Saw it in the runbook",
        **content(
            title="Postgres 16 is now used in production",
            body="The billing cluster now runs Postgres 16 in production; upgrades go through the platform team.",
            tags=["postgres", "production"],
        ),
    )
    plants = actions.propose_create(agent=agent, reason="Told by the user", **content(**PLANTS))
    context, page = ib.open_page(browser, live_server, size)
    held: list = []
    try:
        page.route("**/similar*", lambda route: held.append(route))
        page.goto(f"{live_server.url}/?view=cards")
        page.wait_for_function("() => window.htmx !== undefined")
        for proposal in (upgrade, plants):
            ib.card(page, proposal).locator("label.check").click()
        bar = page.locator("#bulk")
        bar.get_by_role("button", name="Accept selected").click()
        assert "still loading" in bar.locator("[data-hints-note]").inner_text()
        assert not Proposal.objects.filter(pk__in=[upgrade.pk, plants.pk], state=ProposalState.ACCEPTED).exists()
        for route in held:
            route.continue_()
        page.unroute("**/similar*")
        for proposal in (upgrade, plants):
            ib.wait_for_hints(page, proposal.pk)
        with page.expect_navigation():
            bar.get_by_role("button", name="Accept selected").click()
        # The server computed the flags: nothing decided, the confirm offers "Accept only the others".
        assert "Nothing was decided yet" in page.inner_text("#bulk-held")
        assert "1 of 2 carries a flag" in page.inner_text("#bulk-flags")
        with page.expect_navigation():
            page.click("#bulk-all-clear")
        assert Proposal.objects.get(pk=plants.pk).state == ProposalState.ACCEPTED
        assert Proposal.objects.get(pk=upgrade.pk).state == ProposalState.PENDING
    finally:
        context.close()
