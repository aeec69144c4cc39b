"""The inbox hints and the "Changed outside Vetted" queue in a real browser
(fixtures and helpers from tests/test_inbox_browser.py), at phone and
desktop size: merge a create into a revision from its hint, and restore,
approve-current and retire records changed outside Vetted from the queue.
Screenshots land in tests/artifacts/."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from reviews import actions
from reviews.models import Proposal, ProposalAction, Record, RecordStatus
from tests import test_inbox_browser as ib
from tests.conftest import content

pytestmark = ib.pytestmark
browser = ib.browser  # the module-scoped Chromium fixture

PG15: dict[str, Any] = {
    "title": "Postgres 15 is used in production",
    "body": "The billing cluster runs Postgres 15 in production; upgrades go through the platform team.",
    "tags": ["postgres", "production"],
}


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_merge_a_create_into_a_revision_from_its_hint(browser, live_server, agent, team_agent, make_record, size):
    approved = make_record(**PG15)
    revise = actions.propose_revision(
        approved,
        agent=team_agent,
        reason="The upgrade happened",
        title="Postgres 16 is used in production",
        body=PG15["body"].replace("15", "16"),
    )
    create = actions.propose_create(
        agent=agent,
        reason="Saw it in the runbook",
        **content(
            title="Postgres 16 is now used in production",
            body="The billing cluster now runs Postgres 16 in production; upgrades go through the platform team.",
            tags=["postgres", "production"],
        ),
    )
    context, page = ib.open_page(browser, live_server, size)
    try:
        card = ib.card(page, create)
        card.scroll_into_view_if_needed()
        hint = page.locator(f"#hints-{create.pk}")
        hint.wait_for()
        record_hint = hint.locator(f"#hint-{create.pk}-{approved.public_id}")
        assert "possible contradiction" in record_hint.inner_text().lower()
        assert "different numbers: 16 vs 15" in record_hint.inner_text()
        assert revise.public_id in hint.locator(f"#similar-pending-{create.pk}").inner_text()
        assert "score" not in hint.inner_text().lower()
        ib.assert_fits(page, size)
        record_hint.scroll_into_view_if_needed()
        ib.shot(page, f"{size}-hint-contradiction")
        record_hint.get_by_role("button", name=f"Merge into revision of {approved.public_id}").click()
        page.wait_for_selector(f"#proposal-{create.pk} .diff")
        assert "Replaces" in card.inner_text() and approved.public_id in card.inner_text()
        ib.assert_fits(page, size)
        card.scroll_into_view_if_needed()
        ib.shot(page, f"{size}-hint-merged")
        merged = Proposal.objects.get(pk=create.pk)
        assert merged.action == ProposalAction.REVISE and merged.target_id == approved.pk
        assert merged.reason == "Saw it in the runbook"
    finally:
        context.close()


def edit_outside(record: Record, body: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE reviews_record SET body = %s WHERE id = %s", [body, record.pk])


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_changed_outside_vetted_queue_and_its_three_actions(browser, live_server, make_record, size):
    made = [
        make_record(
            title=f"Billing fact number {n}", body=f"Billing fact {n} holds for the team and is checked every month."
        )
        for n in range(3)
    ]
    for record in made:
        edit_outside(record, record.body.replace("every month", "every year, says someone"))
    restore, approve, retire = made
    context, page = ib.open_page(browser, live_server, size)
    try:
        assert page.inner_text("#edited-count").strip() == "3"
        page.locator("header nav a[href='/edited/']").click()
        page.wait_for_selector("h1:has-text('Changed outside Vetted')")
        ib.assert_fits(page, size)
        ib.shot(page, f"{size}-changed-outside", full=True)
        first = page.locator(f"#record-{restore.pk}")
        assert "every month" in first.locator(".outside-diff").inner_text()
        assert first.get_by_role("button", name="Verify").count() == 0
        first.get_by_role("button", name="Restore approved text").click()
        page.wait_for_function("() => document.getElementById('edited-count').textContent.trim() === '2'")

        second = page.locator(f"#record-{approve.pk}")
        second.locator("summary", has_text="Approve current text…").click()
        second.get_by_label("Why this text is right").fill("Checked with the team: yearly now")
        second.get_by_role("button", name="Approve current text as a new version").click()
        page.wait_for_function("() => document.getElementById('edited-count').textContent.trim() === '1'")

        third = page.locator(f"#record-{retire.pk}")
        third.locator("summary", has_text="Retire record…").click()
        third.get_by_label("Why (required)").fill("Nobody knows any more")
        third.get_by_role("button", name="Retire record", exact=True).click()
        page.wait_for_function("() => document.getElementById('edited-count').textContent.trim() === '0'")
        ib.shot(page, f"{size}-changed-outside-done", full=True)

        assert not Record.objects.get(pk=restore.pk).edited_since_approval
        assert Record.objects.get(pk=approve.pk).status == RecordStatus.SUPERSEDED
        assert Record.objects.get(pk=retire.pk).status == RecordStatus.RETIRED
    finally:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_decision_key_waits_for_the_cards_hints(browser, live_server, agent, make_record, size):
    """The hint request is held back (a slow server): `a` pressed before the
    hints came accepts nothing and says why; once they show, `a` accepts."""
    approved = make_record(**PG15)
    create = actions.propose_create(
        agent=agent,
        reason="Saw it in the runbook",
        **content(
            title="Postgres 16 is now used in production",
            body="The billing cluster now runs Postgres 16 in production; upgrades go through the platform team.",
            tags=["postgres", "production"],
        ),
    )
    context, page = ib.open_page(browser, live_server, size)
    held: list = []
    try:
        page.route("**/similar*", lambda route: held.append(route))
        page.reload()
        page.wait_for_load_state("load")
        page.wait_for_function("() => window.htmx !== undefined")
        page.wait_for_function("() => document.querySelector('[data-hints=\"loading\"]') !== null")
        page.keyboard.press("a")
        note = page.locator(f"#proposal-{create.pk} [data-hints-note]")
        note.wait_for()
        assert "still loading" in note.inner_text()
        assert Proposal.objects.get(pk=create.pk).state == "pending"
        for route in held:
            route.continue_()
        page.unroute("**/similar*")
        hint = page.locator(f"#hints-{create.pk}")
        hint.wait_for()
        assert approved.public_id in hint.inner_text() and "different numbers: 16 vs 15" in hint.inner_text()
        ib.shot(page, f"{size}-hint-before-key")
        page.keyboard.press("a")
        page.wait_for_function(f"() => document.querySelector('#proposal-{create.pk}').classList.contains('decided')")
        assert Proposal.objects.get(pk=create.pk).state == "accepted"
    finally:
        context.close()


def test_hints_of_cards_below_the_fold_are_there_without_scrolling(browser, live_server, agent, make_record):
    """Twelve cards on a phone: the last card's hint has come though it was never scrolled to."""
    make_record(**PG15)
    made = [
        actions.propose_create(
            agent=agent,
            reason="Noted during the migration",
            **content(
                title=f"Service {n} runs Postgres 16",
                body=f"Service number {n} runs Postgres 16 in production since the upgrade of the billing cluster.",
            ),
        )
        for n in range(12)
    ]
    context, page = ib.open_page(browser, live_server, "phone")
    try:
        tops = {
            p.pk: page.evaluate(f"document.querySelector('#proposal-{p.pk}').getBoundingClientRect().top") for p in made
        }
        last = max(tops, key=lambda pk: tops[pk])
        assert tops[last] > 844  # below the first screen
        page.locator(f"#hints-{last}").wait_for(state="attached")
        assert page.evaluate("window.scrollY") == 0
    finally:
        context.close()


def test_a_hint_that_fails_to_load_says_so_and_frees_the_keys(browser, live_server, agent):
    """The network drops the hint request: the card says the hints are
    unavailable and `a` works (a key held for ever would be worse)."""
    create = actions.propose_create(agent=agent, reason="Saw it in the runbook", **content(**PG15))
    context, page = ib.open_page(browser, live_server, "desktop")
    try:
        page.route("**/similar*", lambda route: route.abort())
        page.reload()
        page.wait_for_load_state("load")
        page.wait_for_selector(f"#proposal-{create.pk} [data-hints='failed']")
        assert "could not be loaded" in page.locator(f"#proposal-{create.pk} [data-hints-note]").inner_text()
        page.keyboard.press("a")
        page.wait_for_function(f"() => document.querySelector('#proposal-{create.pk}').classList.contains('decided')")
        assert Proposal.objects.get(pk=create.pk).state == "accepted"
    finally:
        context.close()
