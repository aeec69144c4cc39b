"""The decision controls and their aftermath on the review site: one dispute
vocabulary on every page, the Undo toast (htmx and plain POST), the undo
view, Recent decisions, messages that name titles, and landing at the next
card after a plain-form decision."""

from __future__ import annotations

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone

from reviews import actions, vocabulary
from reviews.models import AuditEvent, Proposal, ProposalState, Record, RecordStatus
from tests.conftest import GOOD_BODY

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def controls(html: str, decision: str) -> list[str]:
    return re.findall(rf'<[^>]*data-decision="{decision}"[^>]*>', html)


def summary_keys(html: str) -> dict[str, str]:
    """data-key -> the tag carrying it."""
    return {m.group(1): m.group(0) for m in re.finditer(r'<(?:summary|a|button)[^>]*data-key="(\w)"[^>]*>', html)}


# --------------------------------------------------------------------------- one vocabulary


def test_the_inbox_dispute_card_names_what_happens_to_the_record(signed_in, agent, record):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    html = signed_in.get(reverse("home")).content.decode()
    for decision in vocabulary.DECISIONS:
        assert controls(html, decision), decision
    assert vocabulary.OPENERS[vocabulary.KEEP] in html and vocabulary.LABELS[vocabulary.CORRECT] in html
    assert vocabulary.OPENERS[vocabulary.RETIRE] in html
    assert "Accept: retire" not in html and "Clear dispute" not in html and "Reject…" not in html
    keys = summary_keys(html)
    # No single key retires: t opens a confirm step (a summary), never a submit button.
    assert keys["t"].startswith("<summary") and keys["s"].startswith("<summary")
    assert "a" not in keys and "r" not in keys


def test_disputed_page_has_the_same_words_and_keys_as_the_inbox(signed_in, agent, record):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    inbox = signed_in.get(reverse("home")).content.decode()
    disputed = signed_in.get(reverse("disputed")).content.decode()
    for decision in vocabulary.DECISIONS:
        assert controls(disputed, decision), decision
    assert "Clear dispute" not in disputed
    assert {k: v.split()[0] for k, v in summary_keys(disputed).items()} == {
        k: v.split()[0] for k, v in summary_keys(inbox).items()
    }
    assert 'id="keys-help"' in disputed


def test_a_retirement_card_has_keep_and_retire_but_no_single_key_retire(signed_in, agent, record):
    actions.propose_retirement(record, agent=agent, reason="The service is gone")
    html = signed_in.get(reverse("home")).content.decode()
    assert controls(html, "keep") and controls(html, "retire") and not controls(html, "correct")
    assert summary_keys(html)["t"].startswith("<summary")
    assert "Accept: retire" not in html


def test_the_record_page_speaks_the_same_vocabulary(signed_in, agent, record):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    html = signed_in.get(reverse("record_detail", args=[record.public_id])).content.decode()
    assert controls(html, "keep") and controls(html, "correct") and controls(html, "retire")
    assert "Clear dispute" not in html


def test_keep_record_on_the_inbox_rejects_the_dispute_and_says_so_by_title(signed_in, agent, record):
    dispute = actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    response = signed_in.post(reverse("proposal_reject", args=[dispute.public_id]), {"note": "Checked"}, follow=True)
    assert f"Kept record: {record.title}." in response.content.decode()
    assert Record.objects.get(pk=record.pk).status == RecordStatus.APPROVED


def test_retire_record_on_the_inbox_says_so_by_title(signed_in, agent, record):
    dispute = actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    html = signed_in.post(reverse("proposal_accept", args=[dispute.public_id]), **HX).content.decode()
    assert f"Retired record: {record.title}." in html


# --------------------------------------------------------------------------- toast and undo


def test_an_htmx_decision_brings_the_undo_toast_out_of_band(signed_in, create_proposal):
    p = create_proposal()
    html = signed_in.post(
        reverse("proposal_accept", args=[p.public_id]), HTTP_HX_CURRENT_URL="http://testserver/?tag=x", **HX
    ).content.decode()
    assert 'hx-swap-oob="innerHTML:#undo-region"' in html and 'id="undo-toast"' in html
    event = actions.decision_event(p)
    assert f'name="event" value="{event.pk}"' in html
    assert 'name="next" value="/?tag=x"' in html  # back to the filtered inbox
    assert f"Accepted: {p.title}." in html


def test_undo_by_the_toast_form_reopens_the_card_and_lands_on_it(signed_in, create_proposal):
    p = create_proposal()
    signed_in.post(reverse("proposal_accept", args=[p.public_id]), **HX)
    event = actions.decision_event(p)
    response = signed_in.post(reverse("decision_undo"), {"event": event.pk, "next": "/?tag=x"})
    assert response.status_code == 302 and response["Location"] == f"/?tag=x#proposal-{p.pk}"
    assert Proposal.objects.get(pk=p.pk).state == ProposalState.PENDING
    page = signed_in.get("/").content.decode()
    assert f"Undone: {p.title}." in page


def test_a_plain_post_decision_lands_at_the_next_card_with_an_undo_toast(signed_in, create_proposal):
    first, second = create_proposal(1), create_proposal(2)
    response = signed_in.post(reverse("proposal_reject", args=[first.public_id]), {"next": "/?kind=fact"})
    assert response["Location"] == f"/?kind=fact#proposal-{second.pk}"
    page = signed_in.get("/?kind=fact").content.decode()
    assert 'id="undo-toast"' in page and f"Rejected: {first.title}." in page
    assert '<input type="hidden" name="next" value="/?kind=fact">' in page


def test_bulk_undo_undoes_each_decision(signed_in, create_proposal):
    ps = [create_proposal(i) for i in range(3)]
    rest = create_proposal(9)
    ids = [p.public_id for p in ps]
    # Alike proposals carry flags: confirmed, as the bulk confirm's "flagged included" form does.
    response = signed_in.post(reverse("proposal_bulk"), {"op": "accept", "ids": ids, "flagged_ok": ids})
    assert response["Location"].endswith(f"#proposal-{rest.pk}")
    page = signed_in.get("/").content.decode()
    assert "Accepted 3: Proposal number 0, Proposal number 1, Proposal number 2." in page
    ids = re.findall(r'name="event" value="(\d+)"', page)
    assert len(ids) == 3 and "Undo all 3" in page
    signed_in.post(reverse("decision_undo"), {"event": ids, "next": "/"})
    assert Proposal.objects.filter(state=ProposalState.PENDING).count() == 4
    assert AuditEvent.objects.filter(event_type="decision.undone").count() == 3


def test_undo_by_another_reviewer_is_refused_with_a_message(client, reviewer, second_reviewer, create_proposal):
    p = create_proposal()
    actions.accept_proposal(p, actor=reviewer)
    client.force_login(second_reviewer)
    response = client.post(reverse("decision_undo"), {"event": actions.decision_event(p).pk}, follow=True)
    assert "Only rita, who made this decision, can undo it" in response.content.decode()
    assert Proposal.objects.get(pk=p.pk).state == ProposalState.ACCEPTED


def test_keep_record_on_disputed_has_an_undo_that_makes_it_disputed_again(signed_in, agent, record):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    html = signed_in.post(reverse("record_keep", args=[record.public_id]), **HX).content.decode()
    assert 'id="undo-toast"' in html and f"Kept record: {record.title}." in html
    event = re.search(r'name="event" value="(\d+)"', html).group(1)
    response = signed_in.post(reverse("decision_undo"), {"event": event, "next": "/disputed/"})
    assert response["Location"] == f"/disputed/#record-{record.pk}"
    assert Record.objects.get(pk=record.pk).status == RecordStatus.DISPUTED


def test_a_plain_retire_on_disputed_lands_at_the_next_disputed_card(signed_in, agent, make_record):
    one, two = make_record(title="First record"), make_record(title="Second record", body=GOOD_BODY + " Two.")
    actions.dispute_record(one, agent=agent, reason="The repository was renamed")
    actions.dispute_record(two, agent=agent, reason="The repository was renamed")
    response = signed_in.post(reverse("record_retire", args=[one.public_id]), {"note": "Gone", "next": "/disputed/"})
    assert response["Location"] == f"/disputed/#record-{two.pk}"


def test_the_record_page_says_an_undone_record_was_read_before_the_undo(signed_in, create_proposal, reviewer):
    p = create_proposal()
    made = actions.accept_proposal(p, actor=reviewer).result_record
    Record.objects.filter(pk=made.pk).update(access_count=3)
    actions.undo_decision(p, actor=reviewer)
    html = signed_in.get(reverse("record_detail", args=[made.public_id])).content.decode()
    assert 'id="undone-notice"' in html and "Agents read it 3 times before the decision was undone" in html


# --------------------------------------------------------------------------- recent decisions


def test_recent_decisions_lists_mine_with_undo_or_why_not(signed_in, reviewer, create_proposal, settings):
    settings.VETTED_UNDO_SECONDS = 120
    old, new = create_proposal(1), create_proposal(2)
    past = timezone.now() - timedelta(minutes=10)
    # The audit row is written as if ten minutes ago (rows are append-only: its time cannot be moved later).
    with mock.patch.object(AuditEvent._meta.get_field("at"), "_get_default", lambda: past):
        actions.reject_proposal(old, actor=reviewer)
    actions.accept_proposal(new, actor=reviewer)
    html = signed_in.get(reverse("recent_decisions")).content.decode()
    assert "Proposal number 1" in html and "Proposal number 2" in html
    assert "Too late" in html
    assert html.count('action="/decisions/undo"') == 1
    assert 'aria-current="page"' in html and ">Decisions<" in html


def test_vocabulary_names_each_decision_event_by_what_happened_to_the_record():
    outcome = vocabulary.event_outcome
    assert outcome("proposal.accepted", {"action": "dispute", "retired": "rec_x"}) == vocabulary.RETIRE
    assert outcome("proposal.accepted", {"action": "dispute", "supersedes": "rec_x"}) == vocabulary.CORRECT
    assert outcome("proposal.rejected", {"action": "dispute"}) == vocabulary.KEEP
    assert outcome("proposal.rejected", {"action": "retire"}) == vocabulary.KEEP
    assert outcome("proposal.accepted", {"action": "retire"}) == vocabulary.RETIRE
    assert outcome("proposal.accepted", {"action": "revise", "supersedes": "rec_x"}) == "accepted"
    assert outcome("record.dispute_cleared", {}) == vocabulary.KEEP
    assert outcome("record.revised", {"previous_status": "disputed"}) == vocabulary.CORRECT
    assert outcome("record.revised", {"previous_status": "approved"}) == "revised"
    assert vocabulary.summary("Accepted", ["a" * 100]) == f"Accepted: {'a' * 59}…"
    assert vocabulary.summary("Accepted", ["A", "B", "C", "D"]) == "Accepted 4: A, B, C, …"
