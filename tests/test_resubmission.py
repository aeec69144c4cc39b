"""Resubmission (issue 15 §3): content an agent had rejected, sent again
unchanged, is answered with the earlier decision instead of landing in the
inbox as new; it is stored only with resubmit=true and a reason, and the
reviewer sees it beside the rejection. Another agent's rejection is never
named to it."""

from __future__ import annotations

import json

import pytest

from mcp_bridge import agent_api
from reviews import actions
from reviews.errors import AlreadyRejected, ValidationFailed
from reviews.models import AuditEvent, Proposal, ProposalState
from tests.conftest import GOOD_BODY

pytestmark = pytest.mark.django_db

FACT = {
    "title": "Billing deploys from main",
    "body": GOOD_BODY,
    "kind": "fact",
    "space": "team",
    "tags": ["billing"],
    "reason": "The user said so in today's session.",
}
NOTE = "Deploys moved to the release branch in March."


def rejected(agent, reviewer, **overrides):
    answer = agent_api.propose_context(agent, **{**FACT, **overrides})
    proposal = Proposal.objects.get(public_id=answer["proposal_id"])
    return actions.reject_proposal(proposal, actor=reviewer, note=NOTE)


def test_the_same_agent_sending_rejected_content_again_gets_the_decision_and_nothing_is_stored(agent, reviewer):
    earlier = rejected(agent, reviewer)
    before = Proposal.objects.count()
    answer = agent_api.propose_context(agent, **FACT)
    assert answer["status"] == "already_rejected" and answer["proposal_id"] == earlier.public_id
    assert answer["decision_note"] == NOTE and answer["decided_at"]
    assert answer["proposal"]["state"] == "rejected"
    assert NOTE in answer["message"] and "resubmit=true" in answer["message"]
    assert Proposal.objects.count() == before
    with pytest.raises(AlreadyRejected):  # the action keeps the rule for every caller
        actions.propose_create(agent=agent, **FACT)


def test_resubmit_with_a_reason_stores_it_linked_to_the_rejection(agent, reviewer):
    earlier = rejected(agent, reviewer)
    answer = agent_api.propose_context(
        agent, **FACT, resubmit=True, resubmit_reason="The March move was reverted last week; see the runbook."
    )
    assert answer["status"] == "pending"
    proposal = Proposal.objects.get(public_id=answer["proposal_id"])
    assert proposal.state == ProposalState.PENDING and proposal.resubmits == earlier
    assert proposal.resubmit_reason.startswith("The March move was reverted")
    event = AuditEvent.objects.get(event_type="proposal.created", subject_id=proposal.public_id)
    assert event.extra["resubmits"] == earlier.public_id


def test_resubmit_needs_a_reason_and_something_rejected_to_resubmit(agent, reviewer):
    with pytest.raises(ValidationFailed) as nothing:
        agent_api.propose_context(agent, **FACT, resubmit=True, resubmit_reason="Because it matters a lot.")
    assert "none of your rejected proposals has this content" in nothing.value.fields["resubmit"]
    rejected(agent, reviewer)
    with pytest.raises(ValidationFailed) as no_reason:
        agent_api.propose_context(agent, **FACT, resubmit=True)
    assert "required with resubmit" in no_reason.value.fields["resubmit_reason"]
    with pytest.raises(ValidationFailed, match="true or false"):
        agent_api.propose_context(agent, **FACT, resubmit="yes")


def test_changed_content_is_a_new_proposal(agent, reviewer):
    rejected(agent, reviewer)
    answer = agent_api.propose_context(agent, **{**FACT, "title": "Billing deploys from the release branch"})
    assert answer["status"] == "pending"
    assert Proposal.objects.get(public_id=answer["proposal_id"]).resubmits is None


def test_another_agent_s_rejection_is_never_named_to_it(agent, team_agent, reviewer):
    earlier = rejected(agent, reviewer)
    with pytest.raises(ValidationFailed, match="none of your rejected proposals") as refused:
        agent_api.propose_context(team_agent, **FACT, resubmit=True, resubmit_reason="Trying to learn about others.")
    assert earlier.public_id not in str(refused.value.as_dict())
    answer = agent_api.propose_context(team_agent, **FACT)
    assert answer["status"] == "pending"  # stored like any proposal; the reviewer compares
    assert earlier.public_id not in json.dumps(answer) and NOTE not in json.dumps(answer)
    assert Proposal.objects.get(public_id=answer["proposal_id"]).resubmits is None


def test_a_rejected_revision_sent_again_unchanged_is_answered_with_the_decision(agent, reviewer):
    record_answer = agent_api.propose_context(agent, **FACT)
    record = actions.accept_proposal(record_answer["proposal_id"], actor=reviewer).result_record
    revision = {
        "revises": record.public_id,
        "body": GOOD_BODY + " Friday deploys need approval.",
        "reason": "The user added the Friday rule.",
    }
    first = agent_api.propose_context(agent, **revision)
    actions.reject_proposal(first["proposal_id"], actor=reviewer, note=NOTE)
    again = agent_api.propose_context(agent, **revision)
    assert again["status"] == "already_rejected" and again["proposal_id"] == first["proposal_id"]


def test_rest_answers_already_rejected_with_409_and_stores_a_resubmission(client, agent, reviewer):
    _agent, token = actions.rotate_agent_token(agent, actor=reviewer)
    rejected(agent, reviewer)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    response = client.post("/api/v1/proposals", FACT, content_type="application/json", **auth)
    assert response.status_code == 409 and response.json()["status"] == "already_rejected"
    assert response.json()["decision_note"] == NOTE
    body = {**FACT, "resubmit": True, "resubmit_reason": "The March move was reverted last week."}
    response = client.post("/api/v1/proposals", body, content_type="application/json", **auth)
    assert response.status_code == 201, response.json()


def test_the_inbox_card_shows_the_resubmission_beside_the_rejection(client, agent, reviewer):
    earlier = rejected(agent, reviewer)
    agent_api.propose_context(agent, **FACT, resubmit=True, resubmit_reason="The March move was reverted.")
    client.force_login(reviewer)
    page = client.get("/").content.decode()
    assert "Sent again after a rejection." in page
    assert f"proposed this same content as {earlier.public_id}, rejected" in page and "by rita" in page
    assert NOTE in page and "Why again:</strong> The March move was reverted." in page
    compact = client.get("/?view=compact").content.decode()
    assert "sent again after a rejection" in compact


@pytest.mark.slow
def test_mcp_answers_already_rejected_and_takes_resubmit(gateway, agent_tokens, reviewer):
    from tests.mcp_client import call

    token = agent_tokens["claude-code"]
    first = call(gateway.mcp_url, token, "propose_context", FACT).structured_content
    actions.reject_proposal(first["proposal_id"], actor=reviewer, note=NOTE)
    again = call(gateway.mcp_url, token, "propose_context", FACT).structured_content
    assert again["status"] == "already_rejected" and again["decision_note"] == NOTE
    other = call(gateway.mcp_url, agent_tokens["team-bot"], "propose_context", FACT).structured_content
    assert other["status"] == "pending" and first["proposal_id"] not in json.dumps(other)
    resubmitted = call(
        gateway.mcp_url, token, "propose_context", {**FACT, "resubmit": True, "resubmit_reason": "Reverted in May."}
    ).structured_content
    assert resubmitted["status"] == "pending"
