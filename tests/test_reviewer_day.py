"""The reviewer's day, without a browser: counts that agree after an in-place
decision, burst warnings that say only what is still true, the Decisions page,
the Records list, and the keys the help dialog lists (reviews/vocabulary.py)."""

from __future__ import annotations

import re

import pytest

from reviews import actions, vocabulary
from reviews.models import Record
from tests.conftest import GOOD_BODY

HX = {"HTTP_HX_REQUEST": "true"}


def hx_from(url: str) -> dict:
    return {**HX, "HTTP_HX_CURRENT_URL": f"http://testserver{url}"}


def propose(agent, n: int, **overrides):
    fields = {"kind": "fact", "space": "team", "title": f"Queue host {n}", "body": f"{GOOD_BODY} Queue {n}."}
    return actions.propose_create(agent=agent, reason="Seen in the runbook", **{**fields, **overrides})


def test_an_in_place_decision_updates_the_pages_filter_counts(signed_in, agent):
    first, _second, _third = (propose(agent, n) for n in range(3))
    response = signed_in.post(f"/proposals/{first.public_id}/accept", {"next": "/"}, **hx_from("/?action=create"))
    html = response.content.decode()
    chips = re.search(r'<nav class="chips" id="action-chips"[^>]*hx-swap-oob="true".*?</nav>', html, re.S)
    assert chips, html[-2000:]
    assert re.search(r'aria-current="true">Create <span class="n">2</span>', chips.group(0))
    assert re.search(r'<span id="match-count" hx-swap-oob="true"><strong>2</strong> match</span>', html)
    # Not the inbox (a record page): no inbox counts to swap.
    other = signed_in.post(f"/proposals/{_second.public_id}/accept", {"next": "/"}, **hx_from("/records/"))
    assert 'id="action-chips"' not in other.content.decode()


def test_a_burst_warning_disappears_once_nothing_of_it_is_open(signed_in, settings, agent, reviewer, make_record):
    settings.VETTED_OPEN_DISPUTES_PER_AGENT = 0
    disputes = [
        actions.dispute_record(
            make_record(title=f"Box {n}", body=f"{GOOD_BODY} Box {n}."), agent=agent, reason="The box is gone"
        )
        for n in range(3)
    ]
    assert "disputed 3 records" in signed_in.get("/").content.decode()
    for d in disputes:
        actions.reject_proposal(d, actor=reviewer)
    html = signed_in.get("/disputed/").content.decode()
    assert 'id="dispute-warnings"' not in html and "0 of its disputes" not in html


def test_a_retirement_burst_is_no_note_on_the_same_agents_dispute_card(signed_in, settings, agent, make_record):
    settings.VETTED_OPEN_DISPUTES_PER_AGENT = 0
    for n in range(3):
        record = make_record(title=f"Old box {n}", body=f"{GOOD_BODY} Old box {n}.")
        actions.propose_retirement(record, agent=agent, reason="Switched off")
    dispute = actions.dispute_record(
        make_record(title="Office wifi", body=f"{GOOD_BODY} Wifi."), agent=agent, reason="It moved"
    )
    html = signed_in.get("/?view=cards").content.decode()
    card = re.search(rf'id="proposal-{dispute.pk}" data-card.*?</article>', html, re.S).group(0)
    assert "proposed to retire" not in card
    retirement = re.search(r'<article class="card" id="proposal-\d+" data-card.*?Old box 0.*?</article>', html, re.S)
    assert retirement and "proposed to retire 3" in retirement.group(0)


def test_recent_decisions_name_the_agent_and_the_note_and_no_stale_rule(signed_in, agent, reviewer):
    proposal = propose(agent, 1)
    actions.reject_proposal(proposal, actor=reviewer, note="Covered by the runbook")
    html = signed_in.get("/decisions/").content.decode()
    assert "There is no two-reviewer rule" not in html
    row = re.search(r'<li class="card" id="decision-\d+">.*?</li>', html, re.S).group(0)
    assert "claude-code" in row and "Note: Covered by the runbook" in row and "Queue host 1" in row


def test_a_decision_on_the_changed_outside_list_updates_its_heading(signed_in, make_record):
    first = make_record(title="Staging database host", body=f"{GOOD_BODY} Staging.")
    second = make_record(title="Deploy runbook page", body=f"{GOOD_BODY} Runbook.")
    for record in (first, second):
        Record.objects.filter(pk=record.pk).update(body=f"Edited outside {record.pk}.")
    assert re.search(r'id="worklist-total">2<', signed_in.get("/edited/").content.decode())
    response = signed_in.post(f"/records/{first.public_id}/restore", {"next": "/edited/"}, **hx_from("/edited/"))
    html = response.content.decode()
    assert re.search(r'hx-swap-oob="true" id="worklist-total">1<', html), html[-1500:]
    assert re.search(r'hx-swap-oob="true" id="edited-count">1<', html)


def test_the_records_list_leaves_out_copies_an_undo_retired(signed_in, agent, reviewer):
    proposal = propose(agent, 7, title="Payments queue owner")
    accepted = actions.accept_proposal(proposal, actor=reviewer)
    copy = accepted.result_record
    actions.undo_decision(actions.decision_event(accepted).pk, actor=reviewer)
    again = actions.accept_proposal(proposal.public_id, actor=reviewer).result_record
    html = signed_in.get("/records/").content.decode()
    assert f'id="record-{again.pk}"' in html and f'id="record-{copy.pk}"' not in html
    assert "retired by an undo are left out" in html
    retired = signed_in.get("/records/?status=retired").content.decode()
    assert f'id="record-{copy.pk}"' in retired


@pytest.mark.parametrize("page", ["/", "/disputed/"])
def test_the_help_dialog_lists_every_key_of_the_vocabulary(signed_in, agent, make_record, page):
    actions.dispute_record(make_record(), agent=agent, reason="The host moved")
    propose(agent, 2)
    html = signed_in.get(page).content.decode()
    dialog = re.search(r'<dialog id="keys-help".*?</dialog>', html, re.S).group(0)
    for _title, rows in vocabulary.key_table():
        for keys, meaning in rows:
            assert meaning in dialog
            for key in keys:
                assert f"<kbd>{key}</kbd>" in dialog
    page_keys = re.search(r'data-keys="([^"]*)"', html).group(1)
    assert "&quot;merge&quot;: &quot;m&quot;" in page_keys and "&quot;/disputed/&quot;" in page_keys
