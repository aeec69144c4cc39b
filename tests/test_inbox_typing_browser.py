"""A reviewer's typing is never lost (issue 13 §5: bench_review lost a
correction): in real Chromium at phone and desktop size, an edit form keeps
the field the reviewer chose once htmx settles it, and no late swap replaces
a form the reviewer is typing in."""

from __future__ import annotations

import pytest

from reviews import actions
from reviews.models import Proposal, ProposalState
from tests import test_inbox_browser as base
from tests.test_inbox_browser import card, open_page

pytestmark = base.pytestmark
browser = base.browser

# htmx settles new content (and fires htmx:load, where keys.js focuses an
# edit form's first field) 20 ms after the swap; a slow phone, or a quick
# reviewer, types inside that window. Widening it makes the race certain.
SLOW_SETTLE = "htmx.config.defaultSettleDelay = 1500"
# Counts htmx:load events on edit forms (registered before the form comes).
COUNT_LOADS = """() => { window.editLoads = 0; document.addEventListener('htmx:load', e => {
    if (e.target.matches && e.target.matches('.editing')) window.editLoads += 1; }); }"""


@pytest.fixture
def dispute(agent, make_record):
    record = make_record(title="Payment provider", body="Card payments go through acme-pay.")
    return actions.dispute_record(record, agent=agent, reason="We changed provider in May")


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_typing_in_a_correction_survives_the_settle_and_a_late_swap(browser, live_server, dispute, size):
    context, page = open_page(browser, live_server, size)
    card_id = f"proposal-{dispute.pk}"
    try:
        page.evaluate(SLOW_SETTLE)
        page.evaluate(COUNT_LOADS)
        card(page, dispute).focus()
        page.keyboard.press("e")  # Correct record…
        body = page.locator(f"#{card_id} textarea[name=body]")
        # Until htmx settles, the new card still wears the old card's class
        # (htmx settles "class"), so ".editing" would only match afterwards.
        body.wait_for(state="visible")
        # Before htmx:load, the reviewer picks the field (focus: a click would
        # wait for the card to stop moving, i.e. past the settle).
        body.focus()
        page.keyboard.press("Control+End")
        page.keyboard.type(" Now")
        assert page.evaluate("window.editLoads") == 0  # typed before htmx settled the form
        page.wait_for_function("() => window.editLoads === 1")
        page.keyboard.type(" acme-billing.")  # after htmx:load: still in the body
        assert page.evaluate("document.activeElement.name") == "body"
        assert body.input_value().endswith(" Now acme-billing.")

        # A late answer aimed at the same card (here the card's own GET, as
        # an earlier "open" still in flight would send) must not swap a
        # fresh form over the one being typed in.
        page.evaluate(
            """([url, id]) => new Promise(done => {
                document.addEventListener('htmx:afterRequest', () => setTimeout(done, 500), {once: true});
                htmx.ajax('GET', url, {target: '#' + id, swap: 'outerHTML'});
            })""",
            [f"/proposals/{dispute.public_id}/", card_id],
        )
        assert body.input_value().endswith(" Now acme-billing.")

        body.press("Control+Enter")
        page.wait_for_selector(f"#{card_id}.decided")
        decided = Proposal.objects.select_related("result_record").get(pk=dispute.pk)
        assert decided.state == ProposalState.ACCEPTED
        assert decided.result_record.body == "Card payments go through acme-pay. Now acme-billing."
    finally:
        context.close()
