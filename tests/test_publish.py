"""Publishing approved memory into instruction files: a managed block that
follows the gate's rule, never changes a byte outside it, keeps each tool's
size budget, and turns a hand edit inside it into a proposal from that person."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from portability import publish
from portability.publish import block as blk
from reviews import actions
from reviews.errors import NotFound, ValidationFailed
from reviews.models import Proposal, ProposalAction, ProposalState, Record, RecordStatus

from .conftest import GOOD_BODY

BEFORE = "# My project\n\nHand-written rules stay mine.\r\n\n- keep this  \n"
AFTER = "\n## Notes after the block\n\nTrailing text, no final newline"


def run(*args, **options):
    out, err = io.StringIO(), io.StringIO()
    call_command("publish", *[str(a) for a in args], stdout=out, stderr=err, **options)
    return json.loads(out.getvalue().rstrip("\n").splitlines()[-1]), out.getvalue(), err.getvalue()


def team(**overrides):
    return publish.Selection(person="rita", spaces=("team",), **overrides)


def outside_bytes(data: bytes) -> tuple[bytes, bytes]:
    start = data.index(blk.BEGIN.encode())
    end = data.index(b"<!-- vetted:end")
    end = data.index(b"\n", end) + 1
    return data[:start], data[end:]


def test_the_block_holds_the_selected_deliverable_records_and_nothing_outside_it_changes(db, make_record, tmp_path):
    kept = make_record(title="Deploy window for billing", kind="procedure")
    other_kind = make_record(title="Billing team lead", body=GOOD_BODY + " Lead.", kind="fact")
    target = tmp_path / "CLAUDE.md"
    target.write_bytes(BEFORE.encode() + b"\n" + AFTER.encode())
    original = target.read_bytes()
    summary, _out, _err = run(target, person="rita", space=["team"], kind=["procedure"])
    assert summary["files"][0]["state"] == "written"
    data = target.read_bytes()
    assert data.startswith(original)  # appended after the person's text, every byte of it kept
    text = data.decode()
    assert kept.public_id in text and kept.body.strip() in text
    assert other_kind.public_id not in text
    # A record put before and after the block by the person: both kept byte for byte at the next sync.
    head, tail = outside_bytes(data)
    target.write_bytes(b"Intro line\r\n" + head + data[len(head) : len(data) - len(tail)] + tail + AFTER.encode())
    head, tail = outside_bytes(target.read_bytes())
    actions.retire_record(kept, actor=kept.approved_by, note="Billing deploys any day now.")
    summary, _out, _err = run(target, person="rita", space=["team"], kind=["procedure"])
    assert summary["files"][0]["state"] == "written"
    assert outside_bytes(target.read_bytes()) == (head, tail)
    assert kept.public_id not in target.read_text()


def test_retired_overdue_disputed_and_changed_records_leave_the_block(db, make_record, agent, reviewer, tmp_path):
    records = [make_record(title=f"Rule number {n}", body=f"{GOOD_BODY} Rule {n}.") for n in range(5)]
    target = tmp_path / "AGENTS.md"
    publish.publish_file(target, team())
    assert all(r.public_id in target.read_text() for r in records)
    actions.retire_record(records[0], actor=reviewer, note="No longer true.")
    Record.objects.filter(pk=records[1].pk).update(review_by=timezone.localdate() - timedelta(days=1))
    actions.dispute_record(records[2], agent=agent, reason="The rule changed last week.")
    Record.objects.filter(pk=records[3].pk).update(body="Changed in the database behind Vetted's back.")
    result = publish.publish_file(target, team())
    assert result.records == [records[4].public_id]
    text = target.read_text()
    assert all(r.public_id not in text for r in records[:4])
    assert "behind Vetted's back" not in text


def test_a_hand_edit_inside_the_block_becomes_a_proposal_and_holds_the_block_until_decided(
    db, make_record, reviewer, tmp_path
):
    record = make_record(title="Deploy window for billing", kind="procedure")
    target = tmp_path / "CLAUDE.md"
    target.write_bytes(BEFORE.encode())
    publish.publish_file(target, team())
    edited = target.read_bytes().replace(
        record.body.strip().encode(), (record.body.strip() + " Except in December.").encode()
    )
    target.write_bytes(edited)
    result = publish.publish_file(target, team())
    assert result.state == "held"
    assert target.read_bytes() == edited  # not overwritten
    proposal = Proposal.objects.get(public_id=result.proposals[0])
    assert (proposal.action, proposal.agent, proposal.proposed_by_user) == (ProposalAction.REVISE, None, "rita")
    assert proposal.target == record and proposal.body.endswith("Except in December.")
    assert proposal.state == ProposalState.PENDING
    assert "+" in result.diffs[0] and "Except in December." in result.diffs[0]
    # Held again while it waits, without a second proposal.
    assert publish.publish_file(target, team()).state == "held"
    assert Proposal.objects.filter(proposed_by_user="rita").count() == 1
    # Accepted: the next sync writes the new version.
    new = actions.accept_proposal(proposal, actor=reviewer).result_record
    result = publish.publish_file(target, team())
    assert result.state == "written" and result.records == [new.public_id]
    assert record.public_id not in target.read_text()
    assert target.read_bytes().startswith(BEFORE.encode())


def test_a_rejected_hand_edit_is_replaced_by_the_approved_text(db, make_record, reviewer, tmp_path):
    record = make_record(title="Deploy window for billing", kind="procedure")
    target = tmp_path / "GEMINI.md"
    publish.publish_file(target, team())
    target.write_text(target.read_text().replace(record.body.strip(), "Deploy whenever you like."))
    held = publish.publish_file(target, team())
    actions.reject_proposal(held.proposals[0], actor=reviewer, note="No: the window stands.")
    result = publish.publish_file(target, team())
    assert result.state == "written"
    assert record.body.strip() in target.read_text() and "whenever you like" not in target.read_text()
    assert Proposal.objects.filter(proposed_by_user="rita").count() == 1  # not proposed again


def test_new_text_written_inside_the_block_becomes_a_create_proposal(db, make_record, tmp_path):
    make_record(title="Deploy window for billing", kind="procedure")
    target = tmp_path / "AGENTS.md"
    publish.publish_file(target, team())
    text = target.read_text()
    note_end = text.index("-->", text.index(blk.BEGIN) + len(blk.BEGIN)) + 3
    target.write_text(
        text[:note_end] + "\n\nAlways run the migrations check before tagging a release.\n" + text[note_end:]
    )
    result = publish.publish_file(target, team())
    assert result.state == "held"
    proposal = Proposal.objects.get(public_id=result.proposals[0])
    assert proposal.action == ProposalAction.CREATE and proposal.proposed_by_user == "rita"
    assert proposal.space == "team" and Record.objects.filter(status=RecordStatus.APPROVED).count() == 1


def test_a_publication_never_puts_a_personal_space_into_a_shared_file_or_another_persons(
    db, reviewer, second_reviewer, tmp_path
):
    with pytest.raises(CommandError, match="team spaces only"):
        run(tmp_path / "AGENTS.md", person="rita", space=["personal"], shared=True)
    with pytest.raises(CommandError, match="may not read|another person"):
        run(tmp_path / "AGENTS.md", person="sam", space=["personal"])
    assert not (tmp_path / "AGENTS.md").exists()


def test_each_tool_file_stays_within_its_budget_cutting_in_the_stated_order(db, make_record, tmp_path):
    for n in range(12):
        make_record(title=f"Fact number {n}", body=f"{GOOD_BODY} {'Detail. ' * 60} {n}", kind="fact")
    procedure = make_record(title="The one procedure", body=GOOD_BODY + " Procedure.", kind="procedure")
    target = tmp_path / ".windsurfrules"
    result = publish.publish_file(target, team())
    assert len(target.read_text()) <= publish.budget_for(target) == 6_000
    assert result.left_out > 0 and procedure.public_id in result.records  # procedures are kept first
    assert f"{result.left_out} more record(s) left out" in target.read_text()


def test_a_new_cursor_rule_file_gets_front_matter_that_always_applies(db, make_record, tmp_path):
    make_record(title="Deploy window for billing", kind="procedure")
    target = tmp_path / ".cursor" / "rules" / "vetted.mdc"
    publish.publish_file(target, team())
    assert target.read_text().startswith("---\ndescription: Approved memory from Vetted\nalwaysApply: true\n---\n")


def test_broken_markers_leave_the_file_alone_and_say_why(db, make_record, tmp_path):
    make_record()
    target = tmp_path / "CLAUDE.md"
    target.write_text(f"{blk.BEGIN}\nno end marker\n")
    before = target.read_bytes()
    result = publish.publish_file(target, team())
    assert result.state == "held" and "marker" in result.problems[0]
    assert target.read_bytes() == before


def test_a_person_cannot_propose_from_a_file_about_a_record_they_may_not_read(db, make_record, second_reviewer):
    """sam reads the team space but not rita's personal one: an edit he files
    about her record is refused as unknown, and nothing is stored."""
    private = make_record(title="Rita's private note", body=GOOD_BODY + " Private.", space="personal")
    with pytest.raises(NotFound):
        actions.propose_file_revision(private, user=second_reviewer, reason="Edited", body=GOOD_BODY + " Changed.")
    with pytest.raises(NotFound):
        actions.propose_file_retirement(private, user=second_reviewer, reason="Deleted")
    with pytest.raises(ValidationFailed):
        actions.propose_file_create(
            user=second_reviewer, reason="New", kind="fact", space="personal", title="Into her space", body=GOOD_BODY
        )
    assert not Proposal.objects.filter(proposed_by_user="sam").exists()


def test_a_dry_run_writes_nothing_and_says_what_would_change(db, make_record, tmp_path):
    make_record(title="Deploy window for billing", kind="procedure")
    target = tmp_path / "CLAUDE.md"
    target.write_text("# Mine\n")
    summary, out, _err = run(target, person="rita", space=["team"], dry_run=True)
    assert summary["files"][0]["state"] == "written" and "written" in out
    assert target.read_text() == "# Mine\n"


def test_a_section_removed_by_hand_becomes_a_retirement_and_a_new_record_is_not_mistaken_for_one(
    db, make_record, reviewer, tmp_path
):
    kept = make_record(title="Deploy window for billing", kind="procedure")
    removed = make_record(title="Old release rule", body=GOOD_BODY + " Release rule.", kind="procedure")
    target = tmp_path / "CLAUDE.md"
    publish.publish_file(target, team())
    text = target.read_text()
    start = text.index(f"<!-- vetted:record {removed.public_id} -->")
    stop = text.index("<!-- vetted:", start + 10)
    target.write_text(text[:start] + text[stop:])
    make_record(title="A rule approved since", body=GOOD_BODY + " Approved since.", kind="procedure")
    result = publish.publish_file(target, team())
    assert result.state == "held"
    retire = Proposal.objects.get(public_id=result.proposals[0])
    assert (retire.action, retire.target, retire.proposed_by_user) == (ProposalAction.RETIRE, removed, "rita")
    assert len(result.proposals) == 1  # the record approved since is no deletion
    actions.reject_proposal(retire, actor=reviewer, note="Keep it.")
    result = publish.publish_file(target, team())
    assert result.state == "written" and removed.public_id in target.read_text()
    assert kept.public_id in target.read_text()
