"""Every transition of the actions layer, every invalid one, and their audit rows.

Rule checked throughout: a successful action writes exactly one audit event
in the same transaction; a failed action changes nothing and writes none.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from reviews import actions
from reviews.errors import (
    ChecksumMismatch,
    DuplicateContent,
    InvalidTransition,
    NotFound,
    SpaceNotAllowed,
    ValidationFailed,
)
from reviews.models import AuditEvent, Proposal, ProposalState, Record, RecordStatus
from tests.conftest import content

pytestmark = pytest.mark.django_db


class Unchanged:
    """Asserts that a failing call left every table as it was."""

    def __enter__(self):
        self.before = self.snapshot()
        return self

    def __exit__(self, exc_type, exc, tb):
        assert exc_type is not None, "the call was expected to fail"
        assert self.snapshot() == self.before
        return False

    @staticmethod
    def snapshot():
        return (
            list(AuditEvent.objects.values_list("id", flat=True)),
            list(Record.objects.order_by("id").values()),
            list(Proposal.objects.order_by("id").values()),
        )


def events(event_type=None):
    qs = AuditEvent.objects.order_by("id")
    return list(qs.filter(event_type=event_type) if event_type else qs)


def audit_count():
    return AuditEvent.objects.count()


# ----------------------------------------------------------------- create


def test_agent_proposal_is_pending_and_creates_no_record(agent):
    before = audit_count()
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    assert proposal.state == ProposalState.PENDING
    assert proposal.public_id.startswith("prop_")
    assert Record.objects.count() == 0
    assert audit_count() == before + 1
    event = events("proposal.created")[-1]
    assert (event.actor_type, event.actor, event.proposal_ref) == ("agent", "claude-code", proposal.public_id)
    assert event.checksum_after == proposal.content_checksum


def test_accepting_a_create_makes_an_approved_record_with_provenance(agent, reviewer):
    proposal = actions.propose_create(
        agent=agent,
        reason="Seen in the README",
        session="s-1",
        confidence=0.8,
        metadata={"ref": "ACME-12"},
        **content(),
    )
    before = audit_count()
    accepted = actions.accept_proposal(proposal, actor=reviewer, note="Right")
    record = accepted.result_record
    assert accepted.state == ProposalState.ACCEPTED and accepted.decided_by == reviewer
    assert accepted.decision_note == "Right" and accepted.decided_at is not None
    assert record.public_id.startswith("rec_") and record.status == RecordStatus.APPROVED
    assert record.approved_by == reviewer and record.approved_at is not None
    assert record.approved_checksum == record.current_checksum() == proposal.content_checksum
    assert (record.proposed_by, record.source_tool, record.reason, record.session) == (
        agent,
        "claude-code",
        "Seen in the README",
        "s-1",
    )
    assert record.confidence == 0.8 and record.metadata == {"ref": "ACME-12"}
    assert record.review_by > timezone.localdate()
    assert audit_count() == before + 1
    event = events()[-1]
    assert (event.event_type, event.actor, event.record_ref, event.checksum_after) == (
        "proposal.accepted",
        "rita",
        record.public_id,
        record.approved_checksum,
    )


def test_default_review_date_comes_from_the_kind(agent, settings):
    proposal = actions.propose_create(agent=agent, reason="Team decision", **content(kind="decision"))
    assert proposal.review_by == timezone.localdate() + timedelta(days=settings.VETTED_KINDS["decision"])


def test_accept_with_revision_keeps_proposed_and_approved_text(agent, reviewer):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    accepted = actions.accept_proposal_with_revision(
        proposal, actor=reviewer, changes={"title": "Billing API repo", "tags": ["billing", "Repo"]}
    )
    record = accepted.result_record
    proposal.refresh_from_db()
    assert proposal.title == "Billing API repository"  # what the agent proposed
    assert record.title == "Billing API repo"  # what the reviewer approved
    assert record.tags == ["billing", "repo"]
    assert accepted.reviewer_changes == {"title": "Billing API repo", "tags": ["billing", "repo"]}
    assert record.approved_checksum == record.current_checksum()
    assert events()[-1].extra["reviewer_changed"] == ["tags", "title"]


def test_accept_with_revision_that_changes_nothing_is_refused(agent, reviewer):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    with pytest.raises(ValidationFailed, match="identical to the proposal"), Unchanged():
        actions.accept_proposal_with_revision(proposal, actor=reviewer, changes={"title": "Billing API repository"})
    with pytest.raises(ValidationFailed, match="no changes"), Unchanged():
        actions.accept_proposal_with_revision(proposal, actor=reviewer, changes={})


def test_accept_with_invalid_revision_is_refused_with_field_message(agent, reviewer):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    with pytest.raises(ValidationFailed) as info, Unchanged():
        actions.accept_proposal_with_revision(proposal, actor=reviewer, changes={"kind": "rumour"})
    assert "allowed kinds" in info.value.fields["kind"]
    with pytest.raises(ValidationFailed, match="cannot be changed"), Unchanged():
        actions.accept_proposal_with_revision(proposal, actor=reviewer, changes={"approved_by": "me"})


# ----------------------------------------------------------------- reject / withdraw


def test_reject_stores_the_note_for_the_agent(agent, reviewer):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    before = audit_count()
    rejected = actions.reject_proposal(proposal, actor=reviewer, note="Not a fact, a guess")
    assert rejected.state == ProposalState.REJECTED and rejected.decision_note == "Not a fact, a guess"
    assert Record.objects.count() == 0
    assert audit_count() == before + 1 and events()[-1].event_type == "proposal.rejected"


def test_agent_can_withdraw_its_own_pending_proposal_only(agent, team_agent, reviewer):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    with pytest.raises(InvalidTransition, match="Only the agent"), Unchanged():
        actions.withdraw_proposal(proposal, agent=team_agent)
    withdrawn = actions.withdraw_proposal(proposal, agent=agent, note="Duplicate of my other note")
    assert withdrawn.state == ProposalState.WITHDRAWN
    assert events()[-1].event_type == "proposal.withdrawn"
    with pytest.raises(InvalidTransition, match="already withdrawn"), Unchanged():
        actions.accept_proposal(proposal, actor=reviewer)


@pytest.mark.parametrize(
    "first,second",
    [
        ("accept", "accept"),
        ("accept", "reject"),
        ("reject", "accept"),
        ("reject", "reject"),
    ],
)
def test_a_decided_proposal_cannot_be_decided_again(agent, reviewer, first, second):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    decide = {
        "accept": lambda p: actions.accept_proposal(p, actor=reviewer),
        "reject": lambda p: actions.reject_proposal(p, actor=reviewer, note="no"),
    }
    decide[first](proposal)
    with pytest.raises(InvalidTransition, match="already (accepted|rejected) by rita"), Unchanged():
        decide[second](proposal)


# ----------------------------------------------------------------- who may decide


def test_agent_cannot_approve(agent):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    for attempt in (
        lambda: actions.accept_proposal(proposal, actor=agent),
        lambda: actions.accept_proposal_with_revision(proposal, actor=agent, changes={"title": "Mine now"}),
        lambda: actions.reject_proposal(proposal, actor=agent),
    ):
        with pytest.raises(InvalidTransition, match="Only a reviewer"), Unchanged():
            attempt()


def test_agent_cannot_retire_verify_clear_or_revise_directly(agent, record):
    for attempt in (
        lambda: actions.retire_record(record, actor=agent, note="old"),
        lambda: actions.verify_record(record, actor=agent),
        lambda: actions.clear_dispute(record, actor=agent),
        lambda: actions.revise_record(record, actor=agent, changes={"title": "Changed title"}),
        lambda: actions.create_agent("sneaky", spaces=["team"], actor=agent),
    ):
        with pytest.raises(InvalidTransition, match="Only a reviewer"), Unchanged():
            attempt()


def test_system_actor_and_inactive_user_cannot_decide(agent, reviewer, django_user_model):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    with pytest.raises(InvalidTransition), Unchanged():
        actions.accept_proposal(proposal, actor=actions.SystemActor("system:cron"))
    inactive = django_user_model.objects.create_user("gone", password="x-long-password", is_active=False)
    with pytest.raises(InvalidTransition, match="inactive"), Unchanged():
        actions.accept_proposal(proposal, actor=inactive)


def test_an_active_user_who_is_not_staff_cannot_decide(agent, reviewer, record, django_user_model):
    """The site refuses a non-staff account; the actions (and so the CLI and
    every other caller) refuse it too."""
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content(title="Another title"))
    plain = django_user_model.objects.create_user("una", password="x-long-password")
    for attempt in (
        lambda: actions.accept_proposal(proposal, actor=plain),
        lambda: actions.reject_proposal(proposal, actor=plain, note="No"),
        lambda: actions.retire_record(record, actor=plain, note="Gone"),
        lambda: actions.verify_record(record, actor=plain),
        lambda: actions.create_agent("helper", spaces=["team"], actor=plain),
    ):
        with pytest.raises(InvalidTransition, match="not a reviewer \\(staff\\) account"), Unchanged():
            attempt()


def test_revoked_agent_cannot_propose(agent, reviewer, record):
    actions.revoke_agent(agent, actor=reviewer)
    for attempt in (
        lambda: actions.propose_create(agent=agent, reason="Seen in the README", **content(title="Another")),
        lambda: actions.dispute_record(record, agent=agent, reason="It is wrong now"),
        lambda: actions.propose_retirement(record, agent=agent, reason="It is wrong now"),
    ):
        with pytest.raises(InvalidTransition, match="revoked"), Unchanged():
            attempt()


# ----------------------------------------------------------------- spaces


def test_agent_cannot_propose_outside_its_spaces(team_agent):
    with pytest.raises(SpaceNotAllowed, match="its spaces: team"), Unchanged():
        actions.propose_create(agent=team_agent, reason="Personal note", **content(space="personal"))


def test_records_outside_an_agents_spaces_do_not_exist_for_it(team_agent, make_record):
    personal = make_record(space="personal", title="Rita's editor")
    for attempt in (
        lambda: actions.dispute_record(personal, agent=team_agent, reason="Wrong editor"),
        lambda: actions.propose_retirement(personal, agent=team_agent, reason="Wrong editor"),
        lambda: actions.propose_revision(personal, agent=team_agent, reason="Wrong editor", title="Other"),
    ):
        with pytest.raises(NotFound, match=personal.public_id), Unchanged():
            attempt()


# ----------------------------------------------------------------- duplicates


def test_exact_duplicate_of_an_approved_record_is_refused_with_its_id(agent, record):
    with pytest.raises(DuplicateContent) as info, Unchanged():
        actions.propose_create(agent=agent, reason="Seen again", **content(tags=["repos", "BILLING"]))
    assert info.value.existing_id == record.public_id
    assert record.public_id in info.value.message


def test_an_identical_pending_proposal_of_the_same_agent_is_refused(agent):
    first = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    with pytest.raises(DuplicateContent) as info, Unchanged():
        actions.propose_create(agent=agent, reason="Saw it again", **content())
    assert info.value.existing_id == first.public_id


def test_another_agents_identical_proposal_is_stored_and_the_reviewer_decides(agent, team_agent, reviewer):
    # Refusing it would tell team-bot what claude-code proposed before review.
    first = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    second = actions.propose_create(agent=team_agent, reason="Also saw it", **content())
    assert second.state == ProposalState.PENDING
    record = actions.accept_proposal(first, actor=reviewer).result_record
    with pytest.raises(DuplicateContent, match=record.public_id), Unchanged():
        actions.accept_proposal(second, actor=reviewer)


def test_an_identical_withheld_record_is_no_duplicate_for_an_agent(agent, record):
    Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=1))
    proposal = actions.propose_create(agent=agent, reason="Still true, seen today", **content())
    assert proposal.state == ProposalState.PENDING


def test_same_text_in_another_space_is_not_a_duplicate(agent, record):
    proposal = actions.propose_create(agent=agent, reason="Also mine", **content(space="personal"))
    assert proposal.state == ProposalState.PENDING


def test_duplicate_check_happens_again_at_accept(agent, team_agent, reviewer):
    one = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    two = actions.propose_create(agent=team_agent, reason="Seen in the wiki", **content(title="Billing API repo"))
    # The reviewer's edit makes two identical to the pending one: either may
    # become the record, and then the other is a duplicate of it.
    record = actions.accept_proposal_with_revision(
        two, actor=reviewer, changes={"title": "Billing API repository"}
    ).result_record
    with pytest.raises(DuplicateContent, match=record.public_id), Unchanged():
        actions.accept_proposal(one, actor=reviewer)


# ----------------------------------------------------------------- revise


def test_accepting_a_revision_supersedes_the_target(agent, reviewer, record):
    proposal = actions.propose_revision(
        record, agent=agent, reason="Repo was renamed", body=record.body.replace("acme/billing-api", "acme/billing")
    )
    assert proposal.target == record and proposal.space == record.space and proposal.title == record.title
    accepted = actions.accept_proposal(proposal, actor=reviewer)
    new = accepted.result_record
    record.refresh_from_db()
    assert record.status == RecordStatus.SUPERSEDED and record.superseded_by == new
    assert new.supersedes == record and new.status == RecordStatus.APPROVED
    assert "acme/billing " in new.body
    # History is never destroyed: the old text is still there, still matching its checksum.
    assert record.current_checksum() == record.approved_checksum
    assert Record.objects.filter(status=RecordStatus.APPROVED).count() == 1
    event = events()[-1]
    assert event.extra["supersedes"] == record.public_id and event.checksum_before == record.approved_checksum


def test_revision_cannot_move_a_record_to_another_space(agent, reviewer, record):
    with pytest.raises(ValidationFailed, match="keeps the record's space"), Unchanged():
        actions.propose_revision(record, agent=agent, reason="Make it mine", space="personal")
    proposal = actions.propose_revision(record, agent=agent, reason="Typo fix", title="Billing API repo")
    with pytest.raises(ValidationFailed, match="keeps the record's space"), Unchanged():
        actions.accept_proposal_with_revision(proposal, actor=reviewer, changes={"space": "personal"})


def test_revision_identical_to_the_target_is_refused(agent, record):
    with pytest.raises(ValidationFailed, match="identical"), Unchanged():
        actions.propose_revision(record, agent=agent, reason="No change at all", tags=["repos", "billing"])


def test_revision_of_a_superseded_record_is_refused_naming_the_successor(agent, reviewer, record):
    first = actions.propose_revision(record, agent=agent, reason="Rename", title="Billing API repo")
    second = actions.propose_revision(record, agent=agent, reason="Rename again", title="Billing repository")
    new = actions.accept_proposal(first, actor=reviewer).result_record
    with pytest.raises(InvalidTransition, match=f"superseded by {new.public_id}"), Unchanged():
        actions.accept_proposal(second, actor=reviewer)
    with pytest.raises(InvalidTransition, match=f"superseded by {new.public_id}"), Unchanged():
        actions.propose_revision(record, agent=agent, reason="Rename a third time", title="Billing repo")


def test_reviewer_revises_a_record_directly(reviewer, record):
    new = actions.revise_record(
        record, actor=reviewer, changes={"body": record.body + " Owners: team Ledger."}, note="Added owners"
    )
    record.refresh_from_db()
    assert record.status == RecordStatus.SUPERSEDED and new.supersedes == record
    assert new.approved_by == reviewer and new.reason == "Added owners"
    assert events()[-1].event_type == "record.revised"


# ----------------------------------------------------------------- retire


def test_accepting_a_retirement_retires_the_target(agent, reviewer, record):
    proposal = actions.propose_retirement(record, agent=agent, reason="The service was shut down")
    with pytest.raises(DuplicateContent, match=proposal.public_id), Unchanged():
        actions.propose_retirement(record, agent=agent, reason="Shut down, again")
    actions.accept_proposal(proposal, actor=reviewer)
    record.refresh_from_db()
    assert record.status == RecordStatus.RETIRED
    assert Record.objects.filter(pk=record.pk).exists()  # retired, not deleted


def test_a_retirement_has_no_text_to_revise(agent, reviewer, record):
    proposal = actions.propose_retirement(record, agent=agent, reason="The service was shut down")
    with pytest.raises(ValidationFailed, match="no text to edit"), Unchanged():
        actions.accept_proposal_with_revision(proposal, actor=reviewer, changes={"title": "Something else"})


def test_reviewer_retires_directly_and_needs_a_note(reviewer, record):
    with pytest.raises(ValidationFailed, match="note"), Unchanged():
        actions.retire_record(record, actor=reviewer, note="  ")
    actions.retire_record(record, actor=reviewer, note="Service shut down")
    record.refresh_from_db()
    assert record.status == RecordStatus.RETIRED
    with pytest.raises(InvalidTransition, match="retired"), Unchanged():
        actions.retire_record(record, actor=reviewer, note="Again")


# ----------------------------------------------------------------- dispute


def test_dispute_marks_the_record_disputed_at_once(agent, record):
    before = audit_count()
    proposal = actions.dispute_record(record, agent=agent, reason="The repo moved to acme/ledger")
    record.refresh_from_db()
    assert record.status == RecordStatus.DISPUTED
    assert proposal.state == ProposalState.PENDING and proposal.target == record
    assert audit_count() == before + 1
    event = events()[-1]
    assert (event.event_type, event.record_ref, event.proposal_ref) == (
        "record.disputed",
        record.public_id,
        proposal.public_id,
    )


def test_same_agent_cannot_dispute_twice_but_another_can(agent, team_agent, record):
    first = actions.dispute_record(record, agent=agent, reason="The repo moved")
    with pytest.raises(DuplicateContent, match=first.public_id), Unchanged():
        actions.dispute_record(record, agent=agent, reason="Still moved")
    second = actions.dispute_record(record, agent=team_agent, reason="It moved to acme/ledger")
    assert second.state == ProposalState.PENDING


def test_clear_dispute_rejects_every_pending_dispute_and_restores_approval(agent, team_agent, reviewer, record):
    d1 = actions.dispute_record(record, agent=agent, reason="The repo moved")
    d2 = actions.dispute_record(record, agent=team_agent, reason="It moved to acme/ledger")
    actions.clear_dispute(record, actor=reviewer, note="Checked: it did not move")
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED
    for d in (d1, d2):
        d.refresh_from_db()
        assert d.state == ProposalState.REJECTED and d.decision_note == "Checked: it did not move"
    assert events()[-1].extra["rejected_disputes"] == [d1.public_id, d2.public_id]
    with pytest.raises(InvalidTransition, match="not disputed"), Unchanged():
        actions.clear_dispute(record, actor=reviewer)


def test_rejecting_the_last_dispute_clears_it(agent, team_agent, reviewer, record):
    d1 = actions.dispute_record(record, agent=agent, reason="The repo moved")
    d2 = actions.dispute_record(record, agent=team_agent, reason="It moved to acme/ledger")
    actions.reject_proposal(d1, actor=reviewer, note="No")
    record.refresh_from_db()
    assert record.status == RecordStatus.DISPUTED  # d2 still stands
    actions.reject_proposal(d2, actor=reviewer, note="No")
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED
    assert events()[-1].extra["dispute_cleared"] is True


def test_withdrawing_the_only_dispute_restores_approval(agent, record):
    dispute = actions.dispute_record(record, agent=agent, reason="The repo moved")
    actions.withdraw_proposal(dispute, agent=agent)
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED


def test_accepting_a_dispute_retires_the_record_and_closes_other_disputes(agent, team_agent, reviewer, record):
    d1 = actions.dispute_record(record, agent=agent, reason="The repo moved")
    d2 = actions.dispute_record(record, agent=team_agent, reason="It moved to acme/ledger")
    actions.accept_proposal(d1, actor=reviewer)
    record.refresh_from_db()
    d2.refresh_from_db()
    assert record.status == RecordStatus.RETIRED
    assert d2.state == ProposalState.ACCEPTED and "retired" in d2.decision_note
    assert events()[-1].extra["closed_proposals"] == [d2.public_id]


def test_accepting_a_dispute_with_a_correction_supersedes_the_record(agent, reviewer, record):
    dispute = actions.dispute_record(record, agent=agent, reason="The repo moved to acme/ledger")
    accepted = actions.accept_proposal_with_revision(
        dispute, actor=reviewer, changes={"body": "The billing API lives in the acme/ledger repository now."}
    )
    record.refresh_from_db()
    assert record.status == RecordStatus.SUPERSEDED
    assert accepted.result_record.supersedes == record and "acme/ledger" in accepted.result_record.body


def test_revising_a_disputed_record_resolves_its_disputes(agent, reviewer, record):
    dispute = actions.dispute_record(record, agent=agent, reason="The repo moved")
    new = actions.revise_record(record, actor=reviewer, changes={"title": "Billing API repository (moved)"})
    dispute.refresh_from_db()
    assert dispute.state == ProposalState.ACCEPTED and new.public_id in dispute.decision_note


def test_retired_or_superseded_records_cannot_be_disputed(agent, reviewer, record):
    actions.retire_record(record, actor=reviewer, note="Gone")
    with pytest.raises(InvalidTransition, match="retired"), Unchanged():
        actions.dispute_record(record, agent=agent, reason="Wrong anyway")


# ----------------------------------------------------------------- verify


def test_verify_stamps_verified_and_sets_the_next_review_date(reviewer, record, settings):
    Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=3))
    actions.verify_record(record, actor=reviewer)
    record.refresh_from_db()
    assert record.review_by == timezone.localdate() + timedelta(days=settings.VETTED_KINDS["fact"])
    assert record.verified_at is not None
    event = events()[-1]
    assert (
        event.event_type == "record.verified"
        and event.checksum_before == event.checksum_after == record.approved_checksum
    )
    when = timezone.localdate() + timedelta(days=30)
    actions.verify_record(record, actor=reviewer, review_by=when.isoformat())
    record.refresh_from_db()
    assert record.review_by == when


def test_verify_refuses_a_past_review_date(reviewer, record):
    with pytest.raises(ValidationFailed, match="not in the future"), Unchanged():
        actions.verify_record(record, actor=reviewer, review_by="2001-01-01")


def test_verify_refuses_text_edited_since_approval(reviewer, record):
    # An out-of-band edit (raw SQL, bypassing every action).
    with connection.cursor() as cursor:
        cursor.execute("UPDATE reviews_record SET body = body || ' (edited)' WHERE id = %s", [record.pk])
    with pytest.raises(ChecksumMismatch, match="edited since approval"), Unchanged():
        actions.verify_record(record, actor=reviewer)


def test_verify_refuses_a_disputed_record(agent, reviewer, record):
    actions.dispute_record(record, agent=agent, reason="Wrong now")
    with pytest.raises(InvalidTransition, match="disputed"), Unchanged():
        actions.verify_record(record, actor=reviewer)


def test_edited_record_is_detected_by_checksum(record):
    assert not record.edited_since_approval
    for column, value in (
        ("title", "Other title"),
        ("kind", "decision"),
        ("space", "personal"),
        ("tags", '["billing"]'),
        ("body", "Changed body text for the record here."),
    ):
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE reviews_record SET {column} = %s WHERE id = %s", [value, record.pk])
        assert Record.objects.get(pk=record.pk).edited_since_approval, column


# ----------------------------------------------------------------- agents


def test_agent_token_is_shown_once_and_stored_as_digest(reviewer):
    import hashlib

    agent, token = actions.create_agent("cursor", spaces=["team", "personal"], actor=reviewer)
    assert token.startswith("vt_") and len(token) > 40
    assert agent.token_digest == hashlib.sha256(token.encode()).hexdigest()
    assert agent.spaces == ["personal", "team"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM reviews_agent")
        assert token not in repr(cursor.fetchall())
    assert events()[-1].event_type == "agent.created"


def test_agent_creation_validates_name_and_spaces(reviewer, agent):
    with pytest.raises(ValidationFailed) as info, Unchanged():
        actions.create_agent("Bad Name!", spaces=["world"], actor=reviewer)
    assert "lowercase" in info.value.fields["name"] and "personal, team, system" in info.value.fields["spaces"]
    with pytest.raises(ValidationFailed, match="is not available"), Unchanged():
        actions.create_agent("claude-code", spaces=["team"], actor=reviewer)
    with pytest.raises(ValidationFailed, match="'import' is not available"), Unchanged():
        actions.create_agent("import", spaces=["team"], actor=reviewer)


def test_revoke_agent_keeps_its_history(agent, reviewer, record):
    actions.revoke_agent(agent, actor=reviewer)
    agent.refresh_from_db()
    assert not agent.is_active and agent.revoked_at is not None
    assert Record.objects.get(pk=record.pk).proposed_by == agent
    with pytest.raises(InvalidTransition, match="already revoked"), Unchanged():
        actions.revoke_agent(agent, actor=reviewer)
    with pytest.raises(NotFound), Unchanged():
        actions.revoke_agent("nobody", actor=reviewer)


# ----------------------------------------------------------------- import (the action)


def test_import_is_all_or_nothing(reviewer):
    before = (audit_count(), Proposal.objects.count())
    rows = [
        (1, content()),
        (2, content(title="Deploy window", body="Deploys run weekdays 09:00-16:00 UTC.")),
        (3, content(kind="rumour")),
    ]
    with pytest.raises(actions.ImportFailed) as info:
        actions.import_records(rows)
    assert info.value.result.errors == [{"line": 3, "error": info.value.result.errors[0]["error"]}]
    assert "allowed kinds" in info.value.result.errors[0]["error"]
    assert (audit_count(), Proposal.objects.count()) == before
    assert not actions.Agent.objects.filter(name="import").exists()


def test_import_with_reviewer_approves_each_row(reviewer):
    result = actions.import_records([(1, content()), (2, content(title="Second record"))], reviewer=reviewer)
    assert len(result.created) == 2 and all(i.startswith("rec_") for i in result.created)
    assert Record.objects.filter(approved_by=reviewer).count() == 2
    assert len(events("proposal.accepted")) == 2


# ----------------------------------------------------------------- audit invariants


def test_every_successful_action_writes_exactly_one_event(agent, team_agent, reviewer):
    steps = [
        lambda: actions.propose_create(agent=agent, reason="Seen in README", **content()),
        lambda: actions.accept_proposal(Proposal.objects.get(state="pending"), actor=reviewer),
        lambda: actions.dispute_record(Record.objects.get(), agent=team_agent, reason="Looks wrong to me"),
        lambda: actions.clear_dispute(Record.objects.get(), actor=reviewer),
        lambda: actions.verify_record(Record.objects.get(), actor=reviewer),
        lambda: actions.propose_revision(Record.objects.get(), agent=agent, reason="Rename", title="Renamed title"),
        lambda: actions.accept_proposal(Proposal.objects.get(state="pending"), actor=reviewer),
        lambda: actions.propose_retirement(Record.objects.get(status="approved"), agent=agent, reason="Shut down"),
        lambda: actions.reject_proposal(Proposal.objects.get(state="pending"), actor=reviewer, note="Not yet"),
        lambda: actions.retire_record(Record.objects.get(status="approved"), actor=reviewer, note="Now it is"),
    ]
    for step in steps:
        before = audit_count()
        step()
        assert audit_count() == before + 1


# --------------------------------------------------------------------------- moving between spaces


def test_moving_a_record_to_another_space_supersedes_it_and_is_audited(reviewer, make_record):
    old = make_record(
        space="personal", title="Preferred editor", body="I write all code in Helix with the default keymap."
    )
    new = actions.move_record(old, actor=reviewer, space="team", note="The whole team standardised on it.")
    old.refresh_from_db()
    assert new.space == "team" and new.body == old.body and new.status == RecordStatus.APPROVED
    assert old.status == RecordStatus.SUPERSEDED and old.superseded_by_id == new.pk and new.supersedes_id == old.pk
    assert new.approved_checksum == new.current_checksum() != old.approved_checksum  # space is in the checksum
    event = AuditEvent.objects.get(event_type="record.moved")
    assert event.extra["from_space"] == "personal" and event.extra["to_space"] == "team"
    assert event.record_ref == new.public_id and event.checksum_before == old.approved_checksum


def test_a_move_needs_a_note_a_new_space_and_a_clean_record(reviewer, make_record, agent):
    record = make_record(space="team")
    with pytest.raises(ValidationFailed, match="note"):
        actions.move_record(record, actor=reviewer, space="personal", note="")
    with pytest.raises(ValidationFailed, match="already in team"):
        actions.move_record(record, actor=reviewer, space="team", note="No change.")
    # An unknown space answers as one the person does not belong to does.
    with pytest.raises(NotFound, match="No space 'public'"):
        actions.move_record(record, actor=reviewer, space="public", note="Somewhere else.")
    actions.dispute_record(record, agent=agent, reason="This moved to the wiki.")
    with pytest.raises(InvalidTransition, match="disputed"):
        actions.move_record(record, actor=reviewer, space="personal", note="Keep it for me.")
    with pytest.raises(InvalidTransition):
        actions.move_record(record, actor=agent, space="personal", note="Agents cannot move records.")
    assert not AuditEvent.objects.filter(event_type="record.moved").exists()
