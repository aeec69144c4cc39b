"""One Accept as a plain form (no JavaScript: a card's hints are only a link,
a compact line shows no flags): the server computes the proposal's flags and
a flagged proposal waits for the confirm that names it. With JavaScript
(htmx) the card or line has shown its flags and held Accept until they came,
so the accept goes straight through; an unflagged proposal always does."""

from __future__ import annotations

import re

from reviews import actions
from reviews.models import Proposal, ProposalState
from tests.conftest import content


def contradicting_pair(agent, team_agent) -> tuple[Proposal, Proposal]:
    tuesday = actions.propose_create(
        agent=agent,
        reason="From the runbook",
        **content(title="Billing API deploy day", body="The billing API deploys to production every Tuesday morning."),
    )
    thursday = actions.propose_create(
        agent=team_agent,
        reason="From the chat",
        **content(title="Billing API deploy day", body="The billing API deploys to production every Thursday morning."),
    )
    return tuesday, thursday


def state_of(proposal: Proposal) -> str:
    proposal.refresh_from_db()
    return proposal.state


def test_a_plain_form_accept_of_a_flagged_proposal_waits_for_the_confirm(signed_in, agent, team_agent):
    tuesday, _ = contradicting_pair(agent, team_agent)
    held = signed_in.post(f"/proposals/{tuesday.public_id}/accept", {"next": "/?view=compact"})
    html = held.content.decode()
    assert held.status_code == 200 and 'id="bulk-held"' in html
    assert "this proposal carries a flag you have not seen here" in html and "possible contradiction" in html
    assert state_of(tuesday) == ProposalState.PENDING
    # The confirm names it in flagged_ok and goes back where the reviewer was.
    confirm = re.search(r'<form[^>]*>(?:(?!</form>).)*id="bulk-all-confirm".*?</form>', html, re.S).group(0)
    assert re.findall(r'name="flagged_ok" value="([^"]+)"', confirm) == [tuesday.public_id]
    assert 'name="next" value="/?view=compact"' in confirm
    signed_in.post("/proposals/bulk", {"ids": [tuesday.public_id], "op": "accept", "flagged_ok": [tuesday.public_id]})
    assert state_of(tuesday) == ProposalState.ACCEPTED


def test_an_htmx_accept_of_a_flagged_proposal_goes_through(signed_in, agent, team_agent):
    tuesday, _ = contradicting_pair(agent, team_agent)
    signed_in.post(f"/proposals/{tuesday.public_id}/accept", HTTP_HX_REQUEST="true")
    assert state_of(tuesday) == ProposalState.ACCEPTED


def test_a_plain_form_accept_of_an_unflagged_proposal_goes_through(signed_in, agent):
    plants = actions.propose_create(
        agent=agent,
        reason="Told by the user",
        **content(title="Office plants", body="The office plants are watered on Mondays by whoever arrives first."),
    )
    done = signed_in.post(f"/proposals/{plants.public_id}/accept", {"next": "/"})
    assert done.status_code == 302
    assert state_of(plants) == ProposalState.ACCEPTED


def test_a_plain_form_accept_of_a_decided_proposal_answers_as_before(signed_in, reviewer, agent, team_agent):
    tuesday, _ = contradicting_pair(agent, team_agent)
    actions.reject_proposal(tuesday.public_id, actor=reviewer, note="")
    answer = signed_in.post(f"/proposals/{tuesday.public_id}/accept", {"next": "/"}, follow=True)
    assert 'id="bulk-held"' not in answer.content.decode()
    assert state_of(tuesday) == ProposalState.REJECTED
