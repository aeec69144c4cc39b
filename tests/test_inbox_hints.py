"""The hint beside a create or a revise (similar records and proposals,
possible contradictions with what differs, a labelled similarity), merge
into a revision, reject as a duplicate (and what the agent is told), the
"Changed outside Vetted" queue with its nav count, and the warning about an
agent retiring or disputing many records at once."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.urls import reverse

from inbox.hints import similarity_label
from mcp_bridge import agent_api
from retrieval import index
from retrieval.embeddings import FakeEmbedder
from reviews import actions, vocabulary
from reviews.errors import InvalidTransition, SpaceNotAllowed, ValidationFailed
from reviews.models import AuditEvent, Proposal, ProposalAction, ProposalState, RecordStatus
from tests.conftest import content

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}

PG15: dict[str, Any] = {
    "title": "Postgres 15 is used in production",
    "body": "The billing cluster runs Postgres 15 in production; upgrades go through the platform team.",
    "tags": ["postgres", "production"],
}
PG16_REVISE = {
    "title": "Postgres 16 is used in production",
    "body": "The billing cluster runs Postgres 16 in production; upgrades go through the platform team.",
}
PG16_CREATE: dict[str, Any] = {
    "title": "Postgres 16 is now used in production",
    "body": "The billing cluster now runs Postgres 16 in production; upgrades go through the platform team.",
    "tags": ["postgres", "production"],
}


@pytest.fixture
def signed_in(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def postgres(agent, team_agent, make_record):
    """The issue's case: an approved record, a pending revise of it by one
    agent, and a create by another that says what the revise says."""
    approved = make_record(**PG15)
    revise = actions.propose_revision(approved, agent=team_agent, reason="The upgrade happened", **PG16_REVISE)
    create = actions.propose_create(agent=agent, reason="Saw it in the runbook", **content(**PG16_CREATE))
    return {"approved": approved, "revise": revise, "create": create}


def hint(client, proposal) -> str:
    response = client.get(reverse("proposal_similar", args=[proposal.public_id]), **HX)
    assert response.status_code == 200
    return response.content.decode()


def item(html: str, proposal, match_id: str) -> str:
    found = re.search(rf'<li class="hint[^"]*" id="hint-{proposal.pk}-{match_id}">(.*?)</li>', html, re.S)
    assert found, f"{match_id} is not in the hint"
    return found.group(1)


# --------------------------------------------------------------------------- the hint


def test_a_create_shows_the_approved_record_it_contradicts_and_the_pending_revise_of_it(signed_in, postgres):
    html = hint(signed_in, postgres["create"])
    record = item(html, postgres["create"], postgres["approved"].public_id)
    assert "Possible contradiction" in record
    assert "different numbers: 16 vs 15" in record  # this proposal vs the record
    revise = item(html, postgres["create"], postgres["revise"].public_id)
    assert "team-bot" in revise and "of <a href" in revise and postgres["approved"].public_id in revise
    assert "Possible contradiction" not in revise  # it says the same thing
    assert "1 possible contradiction" in html


def test_the_hint_embeds_the_proposal_once_and_not_again_on_the_next_request(postgres, monkeypatch):
    # inbox-fast: the hint made three look-ups, each embedding the proposal's text again (the similar
    # hint's server time was mostly the model); its vectors now come once from the pending-vector cache.
    from inbox import hints
    from retrieval.similar import pending_vectors

    # Start from an empty per-process cache: an earlier test's proposal may have had this pk and text.
    monkeypatch.setattr(pending_vectors, "_vectors", {})

    class Counting(FakeEmbedder):
        texts: list[str] = []

        def embed(self, texts):
            Counting.texts.extend(texts)
            return super().embed(texts)

    create, embedder = postgres["create"], Counting()
    first = hints.for_proposal(create, embedder=embedder)
    own = index.chunk_texts(create.title, create.body, create.tags)
    assert sum(Counting.texts.count(text) for text in own) == len(own)  # once, not once per look-up
    assert [m.proposal.pk for m in first.pending] == [postgres["revise"].pk]  # still finds the rival revise
    Counting.texts.clear()
    again = hints.for_proposal(create, embedder=embedder)
    assert not set(own) & set(Counting.texts) and again.records == first.records


def test_a_revise_gets_the_hint_too_with_the_competing_revise_of_the_same_record(signed_in, agent, postgres):
    mine = actions.propose_revision(
        postgres["approved"],
        agent=agent,
        reason="Checked the cluster",
        title="Postgres 17 is used in production",
        body=PG16_REVISE["body"].replace("16", "17"),
    )
    page = signed_in.get("/").content.decode()
    assert reverse("proposal_similar", args=[mine.public_id]) in page  # the revise card loads a hint
    html = hint(signed_in, mine)
    rival = item(html, mine, postgres["revise"].public_id)
    assert "Also changes the same record" in rival
    assert "different numbers: 17 vs 16" in rival
    # The record it revises is not listed as a match of itself.
    assert f'id="hint-{mine.pk}-{postgres["approved"].public_id}"' not in html


def test_a_negation_is_named_as_what_differs(signed_in, agent, make_record):
    make_record(
        title="Deploys run on Fridays",
        body="The billing API deploys on Fridays after the weekly review, from the main branch.",
    )
    create = actions.propose_create(
        agent=agent,
        reason="Heard in standup",
        **content(
            title="Deploys do not run on Fridays",
            body="The billing API does not deploy on Fridays after the weekly review, from the main branch.",
        ),
    )
    html = hint(signed_in, create)
    assert "Possible contradiction" in html and "only one of them is negated (&#x27;not&#x27;" in html


def test_similarity_is_labelled_and_no_raw_score_is_shown(signed_in, postgres):
    html = hint(signed_in, postgres["create"])
    assert re.search(r"similarity 0\.\d\d \((identical|very close|close|related|loosely related)\)", html)
    assert "score" not in html.lower()


def test_similarity_labels():
    assert similarity_label(1.0) == "similarity 1.00 (identical)"
    assert similarity_label(0.92) == "similarity 0.92 (very close)"
    assert similarity_label(0.8) == "similarity 0.80 (close)"
    assert similarity_label(0.65) == "similarity 0.65 (related)"
    assert similarity_label(0.55) == "similarity 0.55 (loosely related)"


def test_the_hint_works_as_a_page_without_javascript(signed_in, postgres):
    response = signed_in.get(reverse("proposal_similar", args=[postgres["create"].public_id]))
    html = response.content.decode()
    assert response.status_code == 200 and "<h1>" in html and "Possible contradiction" in html
    assert f'action="{reverse("proposal_merge", args=[postgres["create"].public_id])}"' in html


def test_the_hint_offers_merge_beside_the_record_a_create_updates_and_reject_as_duplicate_beside_a_duplicate(
    signed_in, postgres
):
    html = hint(signed_in, postgres["create"])
    record = item(html, postgres["create"], postgres["approved"].public_id)
    assert f"Merge into revision of {postgres['approved'].public_id}" in record
    # It contradicts the record (16 vs 15): a newer version of it, never a duplicate of it.
    assert "Reject as duplicate of" not in record
    revise = item(html, postgres["create"], postgres["revise"].public_id)
    assert f"Reject as duplicate of {postgres['revise'].public_id}" in revise
    assert "Merge into" not in revise  # merging is into a record, not a proposal


def test_an_agent_cannot_fetch_the_hint(client, postgres, agent_tokens):
    # The hint is the reviewer's: an agent token is no session.
    response = client.get(
        reverse("proposal_similar", args=[postgres["create"].public_id]),
        HTTP_AUTHORIZATION=f"Bearer {agent_tokens['claude-code']}",
    )
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --------------------------------------------------------------------------- merge into revision


def test_merge_turns_the_create_into_a_revise_of_the_record_keeping_text_and_reason(signed_in, reviewer, postgres):
    create, approved = postgres["create"], postgres["approved"]
    before = create.content_checksum
    response = signed_in.post(reverse("proposal_merge", args=[create.public_id]), {"target": approved.public_id}, **HX)
    assert response.status_code == 200
    merged = Proposal.objects.get(pk=create.pk)
    assert merged.action == ProposalAction.REVISE and merged.target_id == approved.pk
    assert merged.state == ProposalState.PENDING and merged.public_id == create.public_id
    assert merged.title == PG16_CREATE["title"] and merged.body == PG16_CREATE["body"]
    assert merged.reason == "Saw it in the runbook" and merged.agent == create.agent
    event = AuditEvent.objects.get(event_type="proposal.merged")
    assert event.actor == "rita" and event.proposal_ref == create.public_id and event.record_ref == approved.public_id
    assert event.checksum_before == before and event.checksum_after == merged.content_checksum
    assert event.extra["was_action"] == "create" and event.extra["supersedes"] == approved.public_id
    # The card now shows the revision's diff against the record.
    html = response.content.decode()
    assert "Replaces <a href" in html and approved.public_id in html and "<ins>" in html
    # Accepting it supersedes the record.
    accepted = actions.accept_proposal(merged, actor=reviewer)
    assert accepted.result_record.supersedes_id == approved.pk


def test_merge_without_javascript_redirects_back_with_a_message(signed_in, postgres):
    create = postgres["create"]
    response = signed_in.post(
        reverse("proposal_merge", args=[create.public_id]), {"target": postgres["approved"].public_id, "next": "/"}
    )
    assert response.status_code == 302
    page = signed_in.get(response["Location"]).content.decode()
    assert "Merged" in page and Proposal.objects.get(pk=create.pk).action == ProposalAction.REVISE


@pytest.mark.parametrize("status", [RecordStatus.RETIRED, RecordStatus.SUPERSEDED])
def test_merge_into_a_record_no_longer_live_is_refused(reviewer, postgres, status):
    approved = postgres["approved"]
    if status == RecordStatus.RETIRED:
        actions.retire_record(approved, actor=reviewer, note="Gone")
    else:
        actions.accept_proposal(postgres["revise"], actor=reviewer)
    with pytest.raises(InvalidTransition, match="retired|superseded"):
        actions.merge_into_revision(postgres["create"], approved.public_id, actor=reviewer)
    assert Proposal.objects.get(pk=postgres["create"].pk).action == ProposalAction.CREATE
    assert not AuditEvent.objects.filter(event_type="proposal.merged").exists()


def test_merge_into_a_record_withheld_from_the_agent_is_refused(reviewer, agent, team_agent, postgres):
    """The agent's proposal_status would name the target: a record it may
    not receive right now (here: disputed by another agent) is not merged into."""
    approved = postgres["approved"]
    actions.dispute_record(approved, agent=team_agent, reason="The owner changed")
    with pytest.raises(InvalidTransition, match="may not receive it right now"):
        actions.merge_into_revision(postgres["create"], approved.public_id, actor=reviewer)
    status = agent_api.proposal_status(agent, postgres["create"].public_id)
    assert approved.public_id not in str(status)
    assert not AuditEvent.objects.filter(event_type="proposal.merged").exists()


def test_merge_of_anything_but_a_pending_create_is_refused(reviewer, postgres, make_record):
    other = make_record(title="Another record about billing", body="Billing invoices go out on the first day.")
    with pytest.raises(InvalidTransition, match="only a create"):
        actions.merge_into_revision(postgres["revise"], other, actor=reviewer)
    actions.reject_proposal(postgres["create"], actor=reviewer)
    with pytest.raises(InvalidTransition, match="already rejected"):
        actions.merge_into_revision(postgres["create"], postgres["approved"], actor=reviewer)


def test_merge_into_a_record_outside_the_agents_spaces_is_refused(reviewer, team_agent, make_record):
    personal = make_record(**{**PG15, "space": "personal"})
    create = actions.propose_create(agent=team_agent, reason="Runbook", **content(**PG16_CREATE))
    with pytest.raises(SpaceNotAllowed, match="team-bot"):
        actions.merge_into_revision(create, personal, actor=reviewer)
    assert Proposal.objects.get(pk=create.pk).target is None


def test_merge_takes_the_records_space(reviewer, agent, make_record):
    personal = make_record(**{**PG15, "space": "personal"})
    create = actions.propose_create(agent=agent, reason="Runbook", **content(**PG16_CREATE))  # team
    merged = actions.merge_into_revision(create, personal, actor=reviewer)
    assert merged.space == "personal"


def test_merge_that_would_change_nothing_is_refused(reviewer, agent, make_record):
    approved = make_record(**PG15)
    # Same text in another space: as a revise of the record it would say exactly what it says.
    create = actions.propose_create(agent=agent, reason="Runbook", **content(**{**PG15, "space": "personal"}))
    with pytest.raises(ValidationFailed, match="duplicate"):
        actions.merge_into_revision(create, approved, actor=reviewer)


def test_an_agent_cannot_merge(agent, postgres):
    with pytest.raises(InvalidTransition, match="reviewer"):
        actions.merge_into_revision(postgres["create"], postgres["approved"], actor=agent)


def test_merge_refused_in_the_view_shows_the_reason_on_the_card(signed_in, reviewer, postgres):
    actions.retire_record(postgres["approved"], actor=reviewer, note="Gone")
    response = signed_in.post(
        reverse("proposal_merge", args=[postgres["create"].public_id]), {"target": postgres["approved"].public_id}, **HX
    )
    assert "it is retired" in response.content.decode()


# --------------------------------------------------------------------------- reject as duplicate


def agent_view(agent, proposal) -> str:
    """What the proposing agent is told about its proposal (the MCP/REST shape)."""
    return str(agent_api.proposal_status(agent, proposal.public_id))


def test_reject_as_duplicate_of_a_readable_record_names_it(signed_in, postgres):
    create, approved = postgres["create"], postgres["approved"]
    response = signed_in.post(
        reverse("proposal_reject_duplicate", args=[create.public_id]),
        {"duplicate_of": approved.public_id, "note": "Same fact"},
        **HX,
    )
    assert response.status_code == 200
    rejected = Proposal.objects.get(pk=create.pk)
    assert rejected.state == ProposalState.REJECTED
    assert approved.public_id in rejected.decision_note and PG15["title"] in rejected.decision_note
    assert rejected.decision_note.endswith("Reviewer's note: Same fact")
    told = agent_view(create.agent, create)
    assert approved.public_id in told and PG15["title"] in told
    event = AuditEvent.objects.get(event_type="proposal.rejected", proposal_ref=create.public_id)
    assert event.extra["duplicate_of"] == approved.public_id


def test_reject_as_duplicate_of_a_record_the_agent_may_not_read_does_not_name_it(reviewer, team_agent, make_record):
    hidden = make_record(**{**PG15, "space": "personal"})  # team-bot has only "team"
    create = actions.propose_create(agent=team_agent, reason="Runbook", **content(**PG15))
    actions.reject_as_duplicate(create, hidden.public_id, actor=reviewer)
    told = agent_view(team_agent, create)
    assert hidden.public_id not in told and PG15["title"] not in told.replace(create.title, "")
    assert actions.UNNAMED_DUPLICATE in told


def test_reject_as_duplicate_of_a_withheld_record_does_not_name_it(reviewer, agent, make_record):
    overdue = make_record(**PG15)
    type(overdue).objects.filter(pk=overdue.pk).update(review_by="2000-01-01")
    create = actions.propose_create(agent=agent, reason="Runbook", **content(**PG16_CREATE))
    actions.reject_as_duplicate(create, overdue.public_id, actor=reviewer)
    assert Proposal.objects.get(pk=create.pk).decision_note == actions.UNNAMED_DUPLICATE


def test_reject_as_duplicate_of_another_agents_pending_proposal_does_not_name_it(signed_in, postgres):
    create, revise = postgres["create"], postgres["revise"]
    signed_in.post(reverse("proposal_reject_duplicate", args=[create.public_id]), {"duplicate_of": revise.public_id})
    told = agent_view(create.agent, create)
    assert revise.public_id not in told and "team-bot" not in told and PG16_REVISE["title"] not in told
    assert actions.UNNAMED_DUPLICATE in told


def test_reject_as_duplicate_of_the_agents_own_pending_proposal_names_it(reviewer, agent):
    first = actions.propose_create(agent=agent, reason="Runbook", **content(**PG16_CREATE))
    again = actions.propose_create(
        agent=agent, reason="Runbook again", **content(**{**PG16_CREATE, "title": "Postgres 16 runs in production"})
    )
    actions.reject_as_duplicate(again, first.public_id, actor=reviewer)
    note = Proposal.objects.get(pk=again.pk).decision_note
    assert f"your proposal {first.public_id}" in note


def test_reject_as_duplicate_refuses_what_is_no_duplicate_target(reviewer, postgres):
    create = postgres["create"]
    with pytest.raises(Exception, match="No record or other proposal"):
        actions.reject_as_duplicate(create, "rec_nothing", actor=reviewer)
    with pytest.raises(Exception, match="No record or other proposal"):
        actions.reject_as_duplicate(create, create.public_id, actor=reviewer)
    actions.retire_record(postgres["approved"], actor=reviewer, note="Gone")
    with pytest.raises(InvalidTransition, match="retired"):
        actions.reject_as_duplicate(create, postgres["approved"].public_id, actor=reviewer)
    assert Proposal.objects.get(pk=create.pk).state == ProposalState.PENDING


# --------------------------------------------------------------------------- changed outside Vetted


def edit_outside(record, **fields):
    """An out-of-band edit (raw SQL, bypassing every action)."""
    sets = ", ".join(f"{name} = %s" for name in fields)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE reviews_record SET {sets} WHERE id = %s", [*fields.values(), record.pk])


def nav_edited_count(html: str) -> int:
    match = re.search(r'id="edited-count">\s*(\d+)\s*<', html)
    assert match, "no Changed outside Vetted count in the nav"
    return int(match.group(1))


def test_the_nav_counts_records_changed_outside_vetted(signed_in, make_record):
    first = make_record(**PG15)
    make_record(title="Another record about billing", body="Billing invoices go out on the first day.")
    assert nav_edited_count(signed_in.get("/").content.decode()) == 0
    edit_outside(first, body="The billing cluster runs Postgres 9 in production.")
    page = signed_in.get("/").content.decode()
    assert nav_edited_count(page) == 1 and f'href="{reverse("edited")}"' in page
    actions.restore_approved_text(first, actor=signed_in.get("/").wsgi_request.user)
    assert nav_edited_count(signed_in.get("/").content.decode()) == 0


def test_the_changed_outside_queue_shows_the_diff_and_the_three_actions(signed_in, make_record):
    record = make_record(**PG15)
    edit_outside(record, body=PG15["body"].replace("15", "9"))
    html = signed_in.get(reverse("edited")).content.decode()
    assert 'aria-current="page"' in html and nav_edited_count(html) == 1
    assert "<del>" in html and "<ins>" in html  # approved → current word diff
    for label in ("Restore approved text", "Approve current text…", vocabulary.OPENERS[vocabulary.RETIRE]):
        assert label in html
    assert ">Verify<" not in html


def test_the_record_page_of_a_changed_record_offers_the_fixes_instead_of_verify(signed_in, make_record):
    record = make_record(**PG15)
    edit_outside(record, body=PG15["body"].replace("15", "9"))
    html = signed_in.get(reverse("record_detail", args=[record.public_id])).content.decode()
    assert (
        "Restore approved text" in html
        and "Approve current text…" in html
        and vocabulary.OPENERS[vocabulary.RETIRE] in html
    )
    assert ">Verify<" not in html


def test_restoring_from_the_queue_updates_the_nav_count(signed_in, make_record):
    record = make_record(**PG15)
    edit_outside(record, body=PG15["body"].replace("15", "9"))
    response = signed_in.post(reverse("record_restore", args=[record.public_id]), **HX)
    assert 'id="edited-count">0<' in response.content.decode()


# --------------------------------------------------------------------------- bursts


def test_an_agent_retiring_many_records_is_named_at_the_top_of_the_inbox(signed_in, team_agent, make_record):
    records = [
        make_record(title=f"Billing fact number {n}", body=f"Billing fact {n} holds for the team.") for n in range(3)
    ]
    for record in records:
        actions.propose_retirement(record, agent=team_agent, reason="No longer true")
    html = signed_in.get("/").content.decode()
    warnings = re.search(r'id="dispute-warnings".*?</div>', html, re.S)
    assert warnings and "team-bot" in warnings.group(0) and "proposed to retire 3 records" in warnings.group(0)
    assert "See the disputed records" not in warnings.group(0)  # a retirement burst is not about disputes


def test_a_few_retirements_raise_no_warning(signed_in, team_agent, make_record):
    record = make_record(title="Billing fact number 1", body="Billing fact 1 holds for the team.")
    actions.propose_retirement(record, agent=team_agent, reason="No longer true")
    assert 'id="dispute-warnings"' not in signed_in.get("/").content.decode()


# --------------------------------------------------------------------------- with the real model


@pytest.mark.model
def test_the_postgres_case_with_the_real_model(postgres):
    from inbox import hints
    from retrieval.embeddings import SentenceTransformerEmbedder, default_model_path

    model = SentenceTransformerEmbedder(default_model_path(), "all-MiniLM-L6-v2", threads=0)
    found = hints.for_proposal(postgres["create"], embedder=model)
    record = next(m for m in found.records if m.record == postgres["approved"])
    assert record.contradiction and "different numbers: 16 vs 15" in record.differs
    assert record.close
    revise = next(m for m in found.pending if m.proposal == postgres["revise"])
    assert revise.same_target and not revise.contradiction and revise.similarity >= 0.85


# --------------------------------------------------------------------------- which actions a match offers


def test_merge_and_duplicate_are_offered_only_for_a_match_close_enough_to_be_one(make_record, agent):
    from inbox.hints import Match
    from retrieval.quality import DUPLICATE_SIMILARITY

    record = make_record()
    proposal = actions.propose_create(
        agent=agent,
        reason="Told by the user",
        **content(title="Other thing", body="Some other text about another thing."),
    )
    loose = Match(DUPLICATE_SIMILARITY - 0.01, record=record)
    assert not loose.close and not loose.mergeable and not loose.duplicate  # "loosely related": nothing offered
    same = Match(0.9, record=record)
    assert same.mergeable and same.duplicate
    updating = Match(0.95, record=record, differs=["different numbers: 16 vs 15"])
    assert updating.mergeable and not updating.duplicate
    contradicting = Match(0.97, proposal=proposal, differs=["only one of them is negated ('not')"])
    assert not contradicting.duplicate and not contradicting.close  # never "reject as duplicate of" it
    other_client = Match(0.9, record=record, different_subject=True)
    assert not other_client.close
    disputed = Match(0.95, record=record, withheld="disputed")
    assert not disputed.close


def test_the_threshold_that_offers_merge_and_duplicate_is_the_documented_one(make_record):
    import re
    from pathlib import Path

    from inbox.hints import Match
    from retrieval.quality import DUPLICATE_SIMILARITY

    page = (Path(__file__).parent.parent / "docs" / "reviewer-hints.md").read_text(encoding="utf-8")
    documented = re.findall(
        r"\| \*\*(?:Reject as duplicate of X|Merge into revision of X)\*\*[^|]*\| similarity ≥ \*\*([0-9.]+)\*\*", page
    )
    assert documented and {float(v) for v in documented} == {DUPLICATE_SIMILARITY}
    record = make_record()
    at = Match(DUPLICATE_SIMILARITY, record=record)
    assert at.mergeable and at.duplicate  # "at or above" the threshold
    below = Match(DUPLICATE_SIMILARITY - 0.001, record=record)
    assert not below.mergeable and not below.duplicate


def test_a_loosely_related_record_gets_no_merge_or_duplicate_button(signed_in, agent, make_record):
    make_record(
        title="Okapi release procedure",
        body="Okapi releases are tagged by the release manager after QA signs off on staging.",
    )
    create = actions.propose_create(
        agent=agent,
        reason="From the wiki",
        **content(
            title="Okapi staging deploys",
            body="Okapi staging deploys run every Wednesday at 14:00 CET from the release branch.",
        ),
    )
    html = hint(signed_in, create)
    assert "Merge into revision of" not in html and "Reject as duplicate of" not in html


# --------------------------------------------------------------------------- withheld records and the same record


def test_a_disputed_or_changed_outside_record_is_in_the_hint_and_marked_so(signed_in, agent, team_agent, make_record):
    disputed = make_record(**PG15)
    actions.dispute_record(disputed, agent=team_agent, reason="The cluster was upgraded")
    disputed.refresh_from_db()
    changed = make_record(
        title="Postgres 15 runs the ledger cluster",
        body="The ledger cluster runs Postgres 15 in production; upgrades go through the platform team.",
        tags=["postgres"],
    )
    with connection.cursor() as cursor:
        cursor.execute("UPDATE reviews_record SET title = %s WHERE id = %s", ["Unreviewed title", changed.pk])
    index.sync(FakeEmbedder())
    create = actions.propose_create(agent=agent, reason="Saw it", **content(**PG16_CREATE))
    html = hint(signed_in, create)
    first = item(html, create, disputed.public_id)
    assert "Disputed" in first
    second = item(html, create, changed.public_id)
    assert "Changed outside Vetted" in second
    assert "Postgres 15 runs the ledger cluster" in second and "Unreviewed title" not in second  # the approved title
    assert "Merge into" not in first + second and "Reject as duplicate" not in first + second


def test_a_retirement_and_a_revision_of_one_record_from_two_agents_each_show_the_other(
    signed_in, agent, team_agent, make_record
):
    record = make_record(**PG15)
    revise = actions.propose_revision(record, agent=team_agent, reason="The upgrade happened", **PG16_REVISE)
    retire = actions.propose_retirement(record, agent=agent, reason="The billing cluster was shut down")
    dispute = actions.dispute_record(record, agent=agent, reason="Not true any more")
    on_revise = hint(signed_in, revise)
    assert retire.public_id in item(on_revise, revise, retire.public_id)
    assert "The billing cluster was shut down" in on_revise and dispute.public_id in on_revise
    on_retire = hint(signed_in, retire)
    assert revise.public_id in item(on_retire, retire, revise.public_id)
    assert dispute.public_id in item(on_retire, retire, dispute.public_id)
    assert "Other pending proposals about this record" in on_retire
    page = signed_in.get("/").content.decode()
    assert reverse("proposal_similar", args=[retire.public_id]) in page  # the retirement card loads its hint


def test_a_card_fetches_its_hint_when_it_is_on_the_page_not_when_scrolled_to(signed_in, postgres):
    page = signed_in.get("/").content.decode()
    assert 'hx-trigger="load"' in page and "intersect" not in page
    assert 'data-hints="loading"' in page and "vetted/hints.js" in page


# --------------------------------------------------------------------------- bulk accept


def test_accept_all_says_how_many_carry_flags_and_can_leave_them_out(signed_in, agent, team_agent):
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
    clear = actions.propose_create(
        agent=agent,
        reason="Told by the user",
        **content(title="Office plants", body="The office plants are watered on Mondays by whoever arrives first."),
    )
    html = signed_in.get("/proposals/bulk-all?op=accept").content.decode()
    assert "Accept 3 proposals?" in html
    assert "2 of 3 carry a flag" in html and "2 possible contradictions" in html
    assert f'id="bulk-flag-{tuesday.public_id}"' in html and f'id="bulk-flag-{thursday.public_id}"' in html
    clear_form = re.search(r'<form[^>]*id="bulk-clear-form".*?</form>', html, re.S)
    assert clear_form and "Accept only the others (1 without flags)" in clear_form.group(0)
    assert re.findall(r'name="ids" value="([^"]+)"', clear_form.group(0)) == [clear.public_id]
    signed_in.post("/proposals/bulk", {"ids": [clear.public_id], "op": "accept", "next": "/"})
    assert Proposal.objects.get(pk=clear.pk).state == ProposalState.ACCEPTED
    assert Proposal.objects.get(pk=tuesday.pk).state == ProposalState.PENDING


def test_accept_all_without_flags_asks_as_before(signed_in, agent):
    actions.propose_create(
        agent=agent,
        reason="Told by the user",
        **content(title="Office plants", body="The office plants are watered on Mondays by whoever arrives first."),
    )
    html = signed_in.get("/proposals/bulk-all?op=accept").content.decode()
    assert "Accept 1 proposal?" in html and "carry a flag" not in html and "bulk-clear-form" not in html


def test_every_bulk_accept_computes_the_flags_on_the_server_as_a_plain_form(signed_in, agent, team_agent):
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
    clear = actions.propose_create(
        agent=agent,
        reason="Told by the user",
        **content(title="Office plants", body="The office plants are watered on Mondays by whoever arrives first."),
    )
    ids = [tuesday.public_id, thursday.public_id, clear.public_id]
    # The checkbox bar's POST (or any script) that never showed the flags: nothing is decided.
    held = signed_in.post("/proposals/bulk", {"ids": ids, "op": "accept", "next": "/?view=cards"})
    html = held.content.decode()
    assert held.status_code == 200 and 'id="bulk-held"' in html and "Nothing was decided yet" in html
    assert "2 of 3 carry a flag" in html and "2 possible contradictions" in html
    assert not Proposal.objects.filter(state=ProposalState.ACCEPTED).exists()
    clear_form = re.search(r'<form[^>]*id="bulk-clear-form".*?</form>', html, re.S).group(0)
    assert "Accept only the others (1 without flags)" in clear_form and "flagged_ok" not in clear_form
    assert 'name="next" value="/?view=cards"' in clear_form
    # Confirming only one of the two flagged is not enough.
    partly = signed_in.post("/proposals/bulk", {"ids": ids, "op": "accept", "flagged_ok": [tuesday.public_id]})
    assert 'id="bulk-held"' in partly.content.decode()
    assert not Proposal.objects.filter(state=ProposalState.ACCEPTED).exists()
    # The confirm's "Accept all, flagged included" form names each flagged one: then all are accepted.
    everything = re.search(r'<form[^>]*>(?:(?!</form>).)*id="bulk-all-confirm".*?</form>', html, re.S).group(0)
    assert sorted(re.findall(r'name="flagged_ok" value="([^"]+)"', everything)) == sorted(ids[:2])
    signed_in.post("/proposals/bulk", {"ids": ids, "op": "accept", "flagged_ok": ids[:2]})
    assert Proposal.objects.filter(state=ProposalState.ACCEPTED).count() == 3


def test_a_bulk_accept_of_unflagged_proposals_and_a_bulk_reject_go_straight_through(signed_in, agent):
    plants = actions.propose_create(
        agent=agent,
        reason="Told by the user",
        **content(title="Office plants", body="The office plants are watered on Mondays by whoever arrives first."),
    )
    done = signed_in.post("/proposals/bulk", {"ids": [plants.public_id], "op": "accept", "next": "/"})
    assert done.status_code == 302 and Proposal.objects.get(pk=plants.pk).state == ProposalState.ACCEPTED
