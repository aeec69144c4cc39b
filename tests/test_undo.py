"""Undo of a reviewer's decision (reviews.actions.undo_decision).

Rule checked throughout: an undo restores the exact prior state of every row
the decision changed (only updated_at moves), retires what the decision
produced as "undone" (never deleted), appends one decision.undone event and
rewrites no audit row; a refused undo changes nothing.
"""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from reviews import actions
from reviews.errors import InvalidTransition
from reviews.models import AuditEvent, Proposal, ProposalState, Record, RecordStatus
from tests.conftest import content

pytestmark = pytest.mark.django_db

IGNORED = {"updated_at"}


def rows():
    """Every proposal and record, as dicts without updated_at (which an undo moves)."""
    strip = lambda d: {k: v for k, v in d.items() if k not in IGNORED}  # noqa: E731
    return (
        {p["public_id"]: strip(p) for p in Proposal.objects.values()},
        {r["public_id"]: strip(r) for r in Record.objects.values()},
    )


def audit_rows():
    return list(AuditEvent.objects.order_by("id").values())


def assert_restored(before, *, produced=None):
    """Every row is as in ``before``; ``produced`` (new since) is retired, not deleted."""
    proposals, records = rows()
    assert proposals == before[0]
    if produced is not None:
        made = records.pop(produced.public_id)
        assert made["status"] == RecordStatus.RETIRED
        assert made["supersedes_id"] is None  # out of the version chain it joined
    assert records == before[1]


def assert_appended_undo(audit_before, count=1):
    after = audit_rows()
    assert after[: len(audit_before)] == audit_before  # nothing rewritten, nothing deleted
    new = after[len(audit_before) :]
    assert [e["event_type"] for e in new] == ["decision.undone"] * count
    return new


@pytest.fixture
def propose(agent):
    def make(**overrides):
        return actions.propose_create(agent=agent, reason="Seen in the README", **content(**overrides))

    return make


def test_undo_of_an_accepted_create_reopens_it_and_retires_the_record_as_undone(reviewer, propose):
    p = propose()
    before = rows()
    accepted = actions.accept_proposal(p, actor=reviewer)
    made = accepted.result_record
    audit_before = audit_rows()
    event = actions.undo_decision(p, actor=reviewer)
    assert_restored(before, produced=made)
    (undo,) = assert_appended_undo(audit_before)
    assert undo["extra"]["retired"] == made.public_id
    assert undo["extra"]["retired_reason"] == "undone"
    assert event.proposal_ref == p.public_id
    p.refresh_from_db()
    assert p.state == ProposalState.PENDING and p.decided_by is None and p.result_record is None
    # It can be decided again: the undone record does not count as a duplicate.
    again = actions.accept_proposal(p, actor=reviewer)
    assert again.result_record != made


def test_undo_of_an_accepted_revision_approves_the_target_again(reviewer, agent, record):
    p = actions.propose_revision(record.public_id, agent=agent, reason="The repo moved", body=record.body + " Moved.")
    before = rows()
    made = actions.accept_proposal(p, actor=reviewer).result_record
    actions.undo_decision(p, actor=reviewer)
    assert_restored(before, produced=made)
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED and record.superseded_by is None


def test_undo_of_an_edited_accept_clears_the_reviewers_changes(reviewer, propose):
    p = propose()
    before = rows()
    made = actions.accept_proposal_with_revision(p, actor=reviewer, changes={"title": "Billing API repo"}).result_record
    actions.undo_decision(p, actor=reviewer)
    assert_restored(before, produced=made)
    p.refresh_from_db()
    assert p.reviewer_changes == {}


def test_undo_of_a_reject_reopens_the_proposal(reviewer, propose):
    p = propose()
    before = rows()
    actions.reject_proposal(p, actor=reviewer, note="No")
    audit_before = audit_rows()
    actions.undo_decision(p, actor=reviewer)
    assert_restored(before)
    assert_appended_undo(audit_before)


def test_undo_of_an_accepted_retirement_restores_the_record_and_reopens_closed_disputes(reviewer, agent, record):
    dispute = actions.dispute_record(record.public_id, agent=agent, reason="Wrong since March")
    retire = actions.propose_retirement(record.public_id, agent=agent, reason="Gone for good")
    before = rows()
    actions.accept_proposal(retire, actor=reviewer)
    assert Proposal.objects.get(pk=dispute.pk).state == ProposalState.ACCEPTED  # closed as fulfilled
    actions.undo_decision(retire, actor=reviewer)
    assert_restored(before)
    record.refresh_from_db()
    assert record.status == RecordStatus.DISPUTED


def test_undo_of_retire_record_on_a_dispute(reviewer, agent, record):
    dispute = actions.dispute_record(record.public_id, agent=agent, reason="Wrong since March")
    before = rows()
    actions.accept_proposal(dispute, actor=reviewer)  # Retire record
    actions.undo_decision(dispute, actor=reviewer)
    assert_restored(before)
    assert Record.objects.get(pk=record.pk).status == RecordStatus.DISPUTED


def test_undo_of_correct_record_on_a_dispute(reviewer, agent, record):
    dispute = actions.dispute_record(record.public_id, agent=agent, reason="Wrong since March")
    before = rows()
    made = actions.accept_proposal_with_revision(
        dispute, actor=reviewer, changes={"body": record.body + " Corrected."}
    ).result_record
    actions.undo_decision(dispute, actor=reviewer)
    assert_restored(before, produced=made)
    assert Record.objects.get(pk=record.pk).status == RecordStatus.DISPUTED


def test_undo_of_keep_record_by_rejecting_the_dispute(reviewer, agent, record):
    dispute = actions.dispute_record(record.public_id, agent=agent, reason="Wrong since March")
    before = rows()
    actions.reject_proposal(dispute, actor=reviewer, note="It stands")
    assert Record.objects.get(pk=record.pk).status == RecordStatus.APPROVED
    actions.undo_decision(dispute, actor=reviewer)
    assert_restored(before)


def test_undo_of_keep_record_on_the_record(reviewer, agent, team_agent, record):
    actions.dispute_record(record.public_id, agent=agent, reason="Wrong since March")
    actions.dispute_record(record.public_id, agent=team_agent, reason="Also wrong")
    before = rows()
    actions.clear_dispute(record, actor=reviewer, note="It stands")
    event = AuditEvent.objects.get(event_type="record.dispute_cleared")
    undo = actions.undo_decision(event.pk, actor=reviewer)
    assert_restored(before)
    assert len(undo.extra["reopened_proposals"]) == 2


def test_undo_of_retire_record_on_the_record(reviewer, record):
    before = rows()
    actions.retire_record(record, actor=reviewer, note="Obsolete")
    actions.undo_decision(AuditEvent.objects.get(event_type="record.retired").pk, actor=reviewer)
    assert_restored(before)


def test_undo_of_a_reviewer_revision_on_the_record(reviewer, record):
    before = rows()
    made = actions.revise_record(record, actor=reviewer, changes={"body": record.body + " Revised."})
    actions.undo_decision(AuditEvent.objects.get(event_type="record.revised").pk, actor=reviewer)
    assert_restored(before, produced=made)


def test_undo_of_verify_restores_the_review_date(reviewer, record):
    before = rows()
    actions.verify_record(record, actor=reviewer, review_by=(timezone.localdate() + timedelta(days=400)).isoformat())
    actions.undo_decision(AuditEvent.objects.get(event_type="record.verified").pk, actor=reviewer)
    assert_restored(before)


def test_undo_of_a_bulk_decision_is_one_undo_per_proposal(reviewer, propose):
    ps = [propose(title=f"Fact number {i}") for i in range(3)]
    before = rows()
    made = [actions.accept_proposal(p, actor=reviewer).result_record for p in ps]
    audit_before = audit_rows()
    for p in ps:
        actions.undo_decision(p, actor=reviewer)
    assert_appended_undo(audit_before, count=3)
    proposals, records = rows()
    assert proposals == before[0]
    assert {r.public_id for r in made} == set(records) - set(before[1])


# ----------------------------------------------------------------- refusals


def refused(decision, actor, match):
    before, audit_before = rows(), audit_rows()
    with pytest.raises(InvalidTransition, match=match):
        actions.undo_decision(decision, actor=actor)
    assert rows() == before and audit_rows() == audit_before
    assert actions.undo_refusal(decision, actor=actor) is not None


def test_undo_is_refused_after_the_window(reviewer, propose, settings):
    settings.VETTED_UNDO_SECONDS = 120
    p = propose()
    actions.accept_proposal(p, actor=reviewer)
    later = timezone.now() + timedelta(seconds=121)  # the clock moves; the audit row stays as written
    with mock.patch("reviews.actions.undo.timezone.now", return_value=later):
        refused(p, reviewer, "Too late to undo")


def test_undo_is_refused_to_another_reviewer(reviewer, second_reviewer, propose):
    p = propose()
    actions.accept_proposal(p, actor=reviewer)
    refused(p, second_reviewer, "Only rita, who made this decision, can undo it")


def test_undo_is_refused_when_a_newer_proposal_names_the_produced_record(reviewer, agent, propose):
    p = propose()
    made = actions.accept_proposal(p, actor=reviewer).result_record
    actions.propose_revision(made.public_id, agent=agent, reason="Fix a typo", body=made.body + " Typo.")
    refused(p, reviewer, "something was built on this decision since")


def test_undo_is_refused_when_the_restored_target_changed_since(reviewer, agent, make_record):
    record = make_record()
    dispute = actions.dispute_record(record.public_id, agent=agent, reason="Wrong since March")
    actions.reject_proposal(dispute, actor=reviewer)  # Keep record: approved again
    actions.verify_record(record, actor=reviewer)  # built on the kept record
    refused(dispute, reviewer, "something was built on this decision since")


def test_undo_is_refused_twice(reviewer, propose):
    p = propose()
    actions.reject_proposal(p, actor=reviewer)
    actions.undo_decision(p, actor=reviewer)
    actions.reject_proposal(p, actor=reviewer)
    first = AuditEvent.objects.filter(event_type="proposal.rejected").order_by("id").first()
    refused(first.pk, reviewer, "already undone")


def test_undo_is_refused_to_an_agent(reviewer, agent, propose):
    p = propose()
    actions.accept_proposal(p, actor=reviewer)
    before = rows()
    with pytest.raises(InvalidTransition):
        actions.undo_decision(p, actor=agent)
    assert rows() == before


def test_undo_refusal_is_none_while_allowed(reviewer, propose):
    p = propose()
    actions.accept_proposal(p, actor=reviewer)
    assert actions.undo_refusal(p, actor=reviewer) is None


def test_undo_records_reads_of_the_produced_record(reviewer, propose):
    p = propose()
    made = actions.accept_proposal(p, actor=reviewer).result_record
    Record.objects.filter(pk=made.pk).update(access_count=4)  # as the access counter does
    undo = actions.undo_decision(p, actor=reviewer)
    assert undo.extra["reads_before_undo"] == 4
