"""The terminal reviewer: `review`, `create_agent` and `revoke_agent`."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from reviews import actions
from reviews.models import Agent, AuditEvent, Proposal, ProposalState, Record, RecordStatus

from .conftest import content

PROJECT_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_reviewer_from_environment(monkeypatch):
    monkeypatch.delenv("VETTED_REVIEWER", raising=False)


def run(*args, **options) -> tuple[str, str]:
    """Run a command through call_command; return (stdout, stderr). CommandError propagates."""
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def review(*args, **options) -> str:
    return run("review", *args, **options)[0]


@pytest.fixture
def propose(agent):
    def make(**overrides):
        return actions.propose_create(agent=agent, reason="Seen in the repo README", **content(**overrides))

    return make


# --------------------------------------------------------------------------- list / show


@pytest.mark.django_db
def test_list_shows_pending_proposals_by_default(propose, reviewer):
    waiting = propose(title="Waiting proposal here")
    decided = propose(title="Decided proposal here")
    actions.accept_proposal(decided, actor=reviewer)

    out = review("list")

    assert waiting.public_id in out
    assert "Waiting proposal here" in out
    assert "claude-code" in out
    assert decided.public_id not in out
    assert len(out.splitlines()) == 1


@pytest.mark.django_db
def test_list_state_all_includes_decided_proposals(propose, reviewer):
    waiting = propose(title="Waiting proposal here")
    decided = propose(title="Decided proposal here")
    actions.accept_proposal(decided, actor=reviewer)

    out = review("list", "--state", "all")

    assert waiting.public_id in out and decided.public_id in out
    assert len(out.splitlines()) == 2


@pytest.mark.django_db
def test_list_state_filters(propose, reviewer):
    propose(title="Waiting proposal here")
    rejected = propose(title="Rejected proposal here")
    actions.reject_proposal(rejected, actor=reviewer, note="Not true")

    lines = review("list", "--state", "rejected").splitlines()

    assert len(lines) == 1
    assert lines[0].startswith(f"{rejected.public_id}  rejected")


@pytest.mark.django_db
def test_list_json_prints_one_parsable_object_per_line(propose, reviewer):
    first = propose(title="First proposal here")
    second = propose(title="Second proposal here")
    actions.reject_proposal(second, actor=reviewer, note="Not true")

    out = review("list", "--state", "all", "--json")

    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == [first.public_id, second.public_id]  # oldest first
    assert rows[0]["state"] == "pending"
    assert rows[0]["agent"] == "claude-code"
    assert rows[0]["title"] == "First proposal here"
    assert rows[1]["state"] == "rejected"
    assert rows[1]["decision_note"] == "Not true"


@pytest.mark.django_db
def test_list_limit(propose):
    for title in ("First proposal here", "Second proposal here", "Third proposal here"):
        propose(title=title)

    out = review("list", "--json", "--limit", "2")

    assert len(out.splitlines()) == 2


@pytest.mark.django_db
def test_list_without_proposals_says_so():
    assert review("list").strip() == "No pending proposals."


@pytest.mark.django_db
def test_list_rejects_an_unknown_state():
    with pytest.raises(CommandError, match="invalid choice"):
        review("list", "--state", "maybe")


@pytest.mark.django_db
def test_show_prints_the_full_proposal_as_json(propose):
    p = propose(title="Shown proposal here")

    data = json.loads(review("show", p.public_id))

    assert data["id"] == p.public_id
    assert data["body"] == p.body
    assert data["review_by"] == str(p.review_by)
    assert data["tags"] == ["billing", "repos"]
    assert data["state"] == "pending"


@pytest.mark.django_db
def test_list_and_show_need_no_reviewer(propose, second_reviewer):
    # Reading does not act as anyone: with two superusers and no --reviewer,
    # list and show still work (deciding would be refused).
    p = propose()

    assert p.public_id in review("list")
    assert json.loads(review("show", p.public_id))["id"] == p.public_id


# --------------------------------------------------------------------------- accept / reject


@pytest.mark.django_db
def test_accept_creates_the_record_and_prints_its_id(propose, reviewer):
    p = propose()

    out = review("accept", p.public_id, "--note", "Checked the README")

    p.refresh_from_db()
    assert p.state == ProposalState.ACCEPTED
    assert p.decided_by == reviewer
    assert p.decision_note == "Checked the README"
    assert p.result_record is not None
    assert p.result_record.status == RecordStatus.APPROVED
    assert p.result_record.public_id in out
    assert out.strip() == f"Accepted {p.public_id} (create) -> {p.result_record.public_id} (approved)."
    assert (
        AuditEvent.objects.filter(event_type="proposal.accepted", proposal_ref=p.public_id, actor="rita").count() == 1
    )


@pytest.mark.django_db
def test_accept_twice_is_refused(propose, reviewer):
    p = propose()
    review("accept", p.public_id)

    with pytest.raises(CommandError, match="already accepted"):
        review("accept", p.public_id)
    assert Record.objects.count() == 1


@pytest.mark.django_db
def test_reject_requires_a_note(propose, reviewer):
    p = propose()

    # argparse's "required" error becomes a CommandError under call_command
    # (Django's CommandParser raises instead of exiting when not run from a shell).
    with pytest.raises(CommandError, match="--note"):
        review("reject", p.public_id)

    p.refresh_from_db()
    assert p.state == ProposalState.PENDING


@pytest.mark.django_db
def test_reject_with_note_stores_it_as_decision_note(propose, reviewer):
    p = propose()

    out = review("reject", p.public_id, "--note", "The repo moved to acme/payments")

    p.refresh_from_db()
    assert p.state == ProposalState.REJECTED
    assert p.decision_note == "The repo moved to acme/payments"
    assert p.decided_by == reviewer
    assert out.strip() == f"Rejected {p.public_id} (create)."
    assert Record.objects.count() == 0
    event = AuditEvent.objects.get(event_type="proposal.rejected")
    assert event.proposal_ref == p.public_id


@pytest.mark.django_db
def test_reject_after_accept_is_refused(propose, reviewer):
    p = propose()
    review("accept", p.public_id)

    with pytest.raises(CommandError, match="already accepted by rita"):
        review("reject", p.public_id, "--note", "Changed my mind")


# --------------------------------------------------------------------------- retire / verify / keep-record


@pytest.mark.django_db
def test_retire_record_with_note(record):
    out = review("retire", record.public_id, "--note", "We moved off this repo")

    record.refresh_from_db()
    assert record.status == RecordStatus.RETIRED
    assert record.public_id in out
    event = AuditEvent.objects.get(event_type="record.retired")
    assert event.snippet == "We moved off this repo"
    assert event.actor == "rita"


@pytest.mark.django_db
def test_retire_requires_a_note(record):
    with pytest.raises(CommandError, match="--note"):
        review("retire", record.public_id)
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED


@pytest.mark.django_db
def test_retire_twice_is_refused(record):
    review("retire", record.public_id, "--note", "We moved off this repo")
    with pytest.raises(CommandError, match="retired"):
        review("retire", record.public_id, "--note", "Again please")


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["fact", "preference", "event"])
def test_verify_default_review_date_is_today_plus_kind_period(make_record, kind):
    rec = make_record(kind=kind)
    Record.objects.filter(pk=rec.pk).update(review_by=timezone.localdate() + timedelta(days=1), verified_at=None)

    out = review("verify", rec.public_id)

    rec.refresh_from_db()
    expected = timezone.localdate() + timedelta(days=settings.VETTED_KINDS[kind])
    assert rec.review_by == expected
    assert rec.verified_at is not None
    assert out.strip() == f"Verified {rec.public_id}; next review by {expected}."
    event = AuditEvent.objects.get(event_type="record.verified")
    assert event.extra["review_by"] == str(expected)


@pytest.mark.django_db
def test_verify_with_review_by_sets_that_date(record):
    wanted = timezone.localdate() + timedelta(days=30)

    review("verify", record.public_id, "--review-by", wanted.isoformat())

    record.refresh_from_db()
    assert record.review_by == wanted


@pytest.mark.django_db
@pytest.mark.parametrize("days", [-1, 0], ids=["yesterday", "today"])
def test_verify_refuses_a_review_date_not_in_the_future(record, days):
    old = Record.objects.get(pk=record.pk).review_by
    when = timezone.localdate() + timedelta(days=days)

    with pytest.raises(CommandError, match="not in the future"):
        review("verify", record.public_id, "--review-by", when.isoformat())

    record.refresh_from_db()
    assert record.review_by == old
    assert not AuditEvent.objects.filter(event_type="record.verified").exists()


@pytest.mark.django_db
def test_verify_refuses_a_malformed_date(record):
    with pytest.raises(CommandError, match="not a date; use YYYY-MM-DD"):
        review("verify", record.public_id, "--review-by", "tomorrow")


@pytest.mark.django_db
def test_verify_refuses_a_disputed_record(record, agent):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed")

    with pytest.raises(CommandError, match="disputed"):
        review("verify", record.public_id)


@pytest.mark.django_db
def test_clear_dispute_restores_approved(record, agent, reviewer):
    dispute = actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    record.refresh_from_db()
    assert record.status == RecordStatus.DISPUTED

    out = review("keep-record", record.public_id, "--note", "Still correct")

    record.refresh_from_db()
    dispute.refresh_from_db()
    assert record.status == RecordStatus.APPROVED
    assert dispute.state == ProposalState.REJECTED
    assert dispute.decision_note == "Still correct"
    assert dispute.decided_by == reviewer
    assert record.public_id in out and "approved again" in out
    assert AuditEvent.objects.filter(event_type="record.dispute_cleared", record_ref=record.public_id).count() == 1


@pytest.mark.django_db
def test_keep_record_keeps_a_disputed_record(record, agent):
    dispute = actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    out, err = run("review", "keep-record", record.public_id, "--note", "Still correct")
    assert f"Kept record {record.public_id}" in out and "approved again" in out
    assert err == ""  # the new name is not deprecated
    assert Proposal.objects.get(pk=dispute.pk).state == ProposalState.REJECTED


@pytest.mark.django_db
def test_the_old_name_clear_dispute_is_refused(record, agent):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    with pytest.raises(CommandError, match="invalid choice: 'clear-dispute'.*keep-record"):
        review("clear-dispute", record.public_id)
    assert Record.objects.get(pk=record.pk).status == RecordStatus.DISPUTED


@pytest.mark.django_db
def test_undo_from_the_cli_reopens_the_proposal(propose, reviewer):
    p = propose()
    actions.accept_proposal(p, actor=reviewer)
    listed = review("decisions")
    assert p.public_id in listed and "can undo" in listed
    out = review("undo", p.public_id)
    assert out.startswith("Undone: accepted") and "retired (undone)" in out
    assert Proposal.objects.get(pk=p.pk).state == ProposalState.PENDING
    with pytest.raises(CommandError, match="already undone|is pending now"):
        review("undo", p.public_id)


@pytest.mark.django_db
def test_clear_dispute_on_a_record_that_is_not_disputed_errors(record):
    with pytest.raises(CommandError, match="not disputed"):
        review("keep-record", record.public_id)
    assert not AuditEvent.objects.filter(event_type="record.dispute_cleared").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["accept", "prop_000000000000"], "No proposal with id 'prop_000000000000'"),
        (["reject", "prop_000000000000", "--note", "No such thing"], "No proposal with id 'prop_000000000000'"),
        (["show", "prop_000000000000"], "No proposal with id 'prop_000000000000'"),
        (["retire", "rec_000000000000", "--note", "Gone for good"], "No record with id 'rec_000000000000'"),
        (["verify", "rec_000000000000"], "No record with id 'rec_000000000000'"),
        (["keep-record", "rec_000000000000"], "No record with id 'rec_000000000000'"),
        (["restore", "rec_000000000000"], "No record with id 'rec_000000000000'"),
        (["approve-current", "rec_000000000000", "--note", "Looks right"], "No record with id 'rec_000000000000'"),
    ],
    ids=["accept", "reject", "show", "retire", "verify", "keep-record", "restore", "approve-current"],
)
def test_unknown_ids_are_reported(reviewer, args, message):
    with pytest.raises(CommandError, match=message):
        review(*args)


# --------------------------------------------------------------------------- records changed outside Vetted

EDITED_BODY = "The billing API was moved to the acme/payments monorepo and deploys from trunk."


@pytest.mark.django_db
def test_restore_puts_back_the_approved_text(record):
    Record.objects.filter(pk=record.pk).update(body=EDITED_BODY)

    out = review("restore", record.public_id, "--note", "Edited in the database by mistake")

    assert out.strip() == f"Restored the approved text of {record.public_id}: {record.title}."
    fresh = Record.objects.get(pk=record.pk)
    assert fresh.body == record.body and not fresh.edited_since_approval
    event = AuditEvent.objects.get(event_type="record.restored")
    assert (event.actor, event.snippet, event.checksum_after) == (
        "rita",
        "Edited in the database by mistake",
        record.approved_checksum,
    )


@pytest.mark.django_db
def test_restore_of_an_unchanged_record_is_refused(record):
    with pytest.raises(CommandError, match="nothing to restore"):
        review("restore", record.public_id)
    assert not AuditEvent.objects.filter(event_type="record.restored").exists()


@pytest.mark.django_db
def test_approve_current_makes_a_new_version_from_the_current_text(record):
    Record.objects.filter(pk=record.pk).update(body=EDITED_BODY)

    out = review("approve-current", record.public_id, "--note", "The move is real")

    new = Record.objects.get(pk=record.pk).superseded_by
    assert out.strip() == f"Approved the current text of {record.public_id} as {new.public_id}."
    assert new.body == EDITED_BODY and new.status == RecordStatus.APPROVED and not new.edited_since_approval
    event = AuditEvent.objects.get(event_type="record.revised")
    assert event.extra["approved_current_text"] is True and event.snippet == "The move is real"


@pytest.mark.django_db
def test_approve_current_requires_a_note(record):
    Record.objects.filter(pk=record.pk).update(body=EDITED_BODY)
    with pytest.raises(CommandError, match="--note"):
        review("approve-current", record.public_id)
    assert Record.objects.get(pk=record.pk).status == RecordStatus.APPROVED


@pytest.mark.django_db
def test_clear_dispute_of_an_edited_record_says_it_stays_withheld(record, agent):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    Record.objects.filter(pk=record.pk).update(body=EDITED_BODY)

    out = review("keep-record", record.public_id)

    assert "Agents still do not receive it" in out and f"review restore {record.public_id}" in out


@pytest.mark.django_db
def test_accepting_a_revision_of_an_edited_record_names_the_way_out(record, agent):
    proposal = actions.propose_revision(
        record, agent=agent, reason="Tag it for the platform team", tags=["billing", "platform"]
    )
    Record.objects.filter(pk=record.pk).update(body=EDITED_BODY)
    with pytest.raises(CommandError, match=rf"changed outside Vetted.*review restore {record.public_id}"):
        review("accept", proposal.public_id)


# --------------------------------------------------------------------------- who acts


@pytest.mark.django_db
def test_reviewer_option_selects_the_acting_user(propose, reviewer, second_reviewer):
    p = propose()

    review("accept", p.public_id, reviewer="sam")

    p.refresh_from_db()
    assert p.decided_by == second_reviewer
    assert AuditEvent.objects.get(event_type="proposal.accepted").actor == "sam"


@pytest.mark.django_db
def test_reviewer_option_before_subcommand_on_the_command_line(propose, reviewer, second_reviewer):
    p = propose()

    review("--reviewer", "sam", "reject", p.public_id, "--note", "Not what we do")

    p.refresh_from_db()
    assert p.decided_by == second_reviewer


@pytest.mark.django_db
def test_vetted_reviewer_environment_variable_selects_the_acting_user(propose, reviewer, second_reviewer, monkeypatch):
    monkeypatch.setenv("VETTED_REVIEWER", "sam")
    p = propose()

    review("accept", p.public_id)

    p.refresh_from_db()
    assert p.decided_by == second_reviewer


@pytest.mark.django_db
def test_reviewer_option_wins_over_the_environment(propose, reviewer, second_reviewer, monkeypatch):
    monkeypatch.setenv("VETTED_REVIEWER", "sam")
    p = propose()

    review("accept", p.public_id, reviewer="rita")

    p.refresh_from_db()
    assert p.decided_by == reviewer


@pytest.mark.django_db
def test_several_superusers_without_reviewer_is_refused(propose, reviewer, second_reviewer):
    p = propose()

    with pytest.raises(CommandError, match="--reviewer"):
        review("accept", p.public_id)
    p.refresh_from_db()
    assert p.state == ProposalState.PENDING


@pytest.mark.django_db
def test_unknown_or_inactive_reviewer_is_refused(propose, reviewer, second_reviewer):
    p = propose()
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        review("accept", p.public_id, reviewer="nobody")

    second_reviewer.is_active = False
    second_reviewer.save()
    with pytest.raises(CommandError, match="inactive"):
        review("accept", p.public_id, reviewer="sam")
    p.refresh_from_db()
    assert p.state == ProposalState.PENDING


@pytest.mark.django_db
def test_a_reviewer_who_is_not_staff_is_refused(propose, reviewer, django_user_model):
    p = propose()
    django_user_model.objects.create_user("una", password="x-long-password")
    with pytest.raises(CommandError, match="'una' is not a reviewer \\(staff\\) account"):
        review("accept", p.public_id, reviewer="una")
    p.refresh_from_db()
    assert p.state == ProposalState.PENDING


# --------------------------------------------------------------------------- review account


@pytest.mark.django_db
def test_review_account_changes_staff_status_and_activity_audited(reviewer, django_user_model):
    django_user_model.objects.create_user("una", password="x-long-password")
    assert review("account", "staff", "una", "--on") == "User 'una' is now a reviewer (staff).\n"
    assert django_user_model.objects.get(username="una").is_staff
    assert review("account", "deactivate", "una") == "User 'una' is deactivated.\n"
    assert review("account", "activate", "una") == "User 'una' is active again.\n"
    assert review("account", "staff", "una", "--off") == "User 'una' is no longer a reviewer (staff).\n"
    events = AuditEvent.objects.filter(subject_id="una").order_by("pk").values_list("event_type", "actor")
    assert list(events) == [
        ("account.staff_granted", "rita"),
        ("account.deactivated", "rita"),
        ("account.activated", "rita"),
        ("account.staff_removed", "rita"),
    ]


@pytest.mark.django_db
def test_review_account_refuses_a_no_op_oneself_and_unknown_users(reviewer, django_user_model):
    django_user_model.objects.create_user("una", password="x-long-password")
    with pytest.raises(CommandError, match="'una' is not a staff account; there is nothing to remove"):
        review("account", "staff", "una", "--off")
    with pytest.raises(CommandError, match="your own account"):
        review("account", "deactivate", "rita")
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        review("account", "activate", "nobody")
    with pytest.raises(CommandError):
        review("account", "staff", "una")  # --on or --off is required
    assert not AuditEvent.objects.filter(event_type__startswith="account.").exists()


# --------------------------------------------------------------------------- create_agent


def _all_stored_values():
    """Every value in every table of the database, as text."""
    values: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                values.extend(str(v) for v in row if v is not None)
    return values


@pytest.mark.django_db
def test_create_agent_prints_the_token_alone_on_the_last_line(reviewer):
    out, err = run("create_agent", "laptop-bot", "--spaces", "personal,team", "--source-tool", "claude-code")

    lines = out.splitlines()
    token = lines[-1]
    assert token == token.strip()
    assert token.startswith("vt_")
    assert len(token) > 40
    assert " " not in token
    assert lines == [token]  # nothing else on stdout; the explanations go to stderr
    assert "shown only this once" in err

    agent = Agent.objects.get(name="laptop-bot")
    assert agent.spaces == ["personal", "team"]
    assert agent.source_tool == "claude-code"
    assert agent.is_active
    assert agent.created_by == "rita"
    event = AuditEvent.objects.get(event_type="agent.created")
    assert event.subject_id == agent.public_id
    assert event.actor == "rita"


@pytest.mark.django_db
def test_create_agent_stores_only_the_token_digest(reviewer):
    out, _ = run("create_agent", "laptop-bot", "--spaces", "personal")
    token = out.splitlines()[-1]

    agent = Agent.objects.get(name="laptop-bot")
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    assert agent.token_digest == digest
    assert token.startswith(agent.token_prefix)
    assert len(agent.token_prefix) < len(token)

    stored = _all_stored_values()
    assert digest in stored  # the scan does see the agent row
    assert not any(token in value for value in stored)


@pytest.mark.django_db
def test_create_agent_token_authenticates_by_digest(reviewer):
    out, _ = run("create_agent", "laptop-bot", "--spaces", "team")
    token = out.splitlines()[-1]
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    assert Agent.objects.get(token_digest=digest).name == "laptop-bot"


@pytest.mark.django_db
@pytest.mark.parametrize("spaces", ["personal,galaxy", "admin", ","])
def test_create_agent_invalid_space_lists_allowed_spaces(reviewer, spaces):
    with pytest.raises(CommandError) as caught:
        run("create_agent", "laptop-bot", "--spaces", spaces)

    assert "spaces" in str(caught.value)
    assert "personal, team, system" in str(caught.value)
    assert not Agent.objects.filter(name="laptop-bot").exists()
    assert not AuditEvent.objects.filter(event_type="agent.created").exists()


@pytest.mark.django_db
def test_create_agent_requires_spaces(reviewer):
    with pytest.raises(CommandError, match="--spaces"):
        run("create_agent", "laptop-bot")


@pytest.mark.django_db
def test_create_agent_refuses_a_duplicate_name(reviewer):
    run("create_agent", "laptop-bot", "--spaces", "personal")

    with pytest.raises(CommandError, match="is not available"):
        run("create_agent", "laptop-bot", "--spaces", "team")
    with pytest.raises(CommandError, match="is not available"):
        run("create_agent", "Laptop-Bot", "--spaces", "team")  # names are case-insensitive
    assert Agent.objects.get(name="laptop-bot").spaces == ["personal"]


@pytest.mark.django_db
def test_create_agent_refuses_the_reserved_import_name(reviewer):
    with pytest.raises(CommandError, match="'import' is not available"):
        run("create_agent", "import", "--spaces", "personal")
    assert not Agent.objects.filter(name="import").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["x", "has space", "-leading-dash", "bad/slash"])
def test_create_agent_refuses_a_malformed_name(reviewer, name):
    with pytest.raises(CommandError, match="name"):
        run("create_agent", name, "--spaces", "personal")
    assert Agent.objects.count() == 0


@pytest.mark.django_db
def test_create_agent_without_any_user_says_how_to_create_one():
    with pytest.raises(CommandError, match="createsuperuser"):
        run("create_agent", "laptop-bot", "--spaces", "personal")
    assert Agent.objects.count() == 0


# --------------------------------------------------------------------------- revoke_agent


@pytest.mark.django_db
def test_revoke_agent_makes_it_inactive(agent, reviewer):
    out, _ = run("revoke_agent", "claude-code")

    agent.refresh_from_db()
    assert not agent.is_active
    assert agent.revoked_at is not None
    assert abs((timezone.now() - agent.revoked_at).total_seconds()) < 60
    assert out.strip() == f"Revoked agent claude-code ({agent.public_id})."
    event = AuditEvent.objects.get(event_type="agent.revoked")
    assert event.subject_id == agent.public_id
    assert event.actor == "rita"


@pytest.mark.django_db
def test_revoked_agent_can_no_longer_propose(agent):
    run("revoke_agent", "claude-code")
    agent.refresh_from_db()

    from reviews.errors import InvalidTransition

    with pytest.raises(InvalidTransition, match="revoked"):
        actions.propose_create(agent=agent, reason="Seen in the README", **content())


@pytest.mark.django_db
def test_revoking_twice_is_refused(agent):
    run("revoke_agent", "claude-code")

    with pytest.raises(CommandError, match="already revoked"):
        run("revoke_agent", "claude-code")
    assert AuditEvent.objects.filter(event_type="agent.revoked").count() == 1


@pytest.mark.django_db
def test_revoking_an_unknown_agent_is_refused(reviewer):
    with pytest.raises(CommandError, match="No agent named 'ghost'"):
        run("revoke_agent", "ghost")


@pytest.mark.django_db
def test_revoke_agent_uses_the_named_reviewer(agent, second_reviewer):
    run("revoke_agent", "claude-code", reviewer="sam")
    assert AuditEvent.objects.get(event_type="agent.revoked").actor == "sam"


# --------------------------------------------------------------------------- a real process


@pytest.mark.slow
def test_malformed_review_date_from_a_shell_is_a_clean_error(tmp_path):
    env = {k: val for k, val in os.environ.items() if k not in {"VETTED_DB_PATH", "VETTED_REVIEWER"}}
    env.update(DJANGO_SETTINGS_MODULE="memory_site.settings", VETTED_HOME=str(tmp_path / "home"))

    result = subprocess.run(
        [sys.executable, "manage.py", "review", "verify", "rec_000000000000", "--review-by", "tomorrow"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert "not a date" in result.stderr
    assert "Traceback" not in result.stderr
