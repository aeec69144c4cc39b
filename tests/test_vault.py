"""The vault: one person's approved memory as Markdown notes in a real
folder, kept in step with decisions; edits, deletions and inbox notes come
back as proposals from that person and nothing is ever approved by it."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from portability import vault
from portability.markdown_io import file_name
from reviews import actions
from reviews.models import Proposal, ProposalAction, ProposalState, Record, RecordStatus

from .conftest import GOOD_BODY


def note_of(root, record):
    return root / record.space / file_name(record)


def test_a_pass_writes_one_note_per_deliverable_record_an_index_per_space_and_pending(
    db, make_record, create_proposal, tmp_path
):
    team = make_record(title="Deploy window for billing")
    mine = make_record(title="My editor settings", body=GOOD_BODY + " Mine.", space="personal")
    waiting = create_proposal(1)
    root = tmp_path / "vault"
    result = vault.reconcile(root, "rita")
    assert note_of(root, team).read_text().startswith(f"---\nid: {team.public_id}\n")
    assert note_of(root, mine).exists()
    assert f"[[{file_name(team)[:-3]}|Deploy window for billing]]" in (root / "team" / "_index.md").read_text()
    assert (root / "_pending" / f"{waiting.public_id}.md").exists()
    assert not result.proposals
    assert vault.reconcile(root, "rita").written == []  # a second pass changes nothing


def test_a_persons_vault_holds_only_the_spaces_they_may_read(db, make_record, second_reviewer, tmp_path):
    make_record(title="Deploy window for billing")
    private = make_record(title="Rita's private note", body=GOOD_BODY + " Private.", space="personal")
    root = tmp_path / "sam"
    vault.reconcile(root, "sam")
    assert not list(root.rglob(f"*{private.public_id}*"))
    assert not (root / "personal").exists()
    assert list((root / "team").glob("*.md"))


def test_an_edited_note_becomes_a_revision_from_that_person_and_stays_until_decided(
    db, make_record, reviewer, tmp_path
):
    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    vault.reconcile(root, "rita")
    path = note_of(root, record)
    edited = path.read_text().replace("every weekday", "every weekday except Fridays")
    path.write_text(edited)
    result = vault.reconcile(root, "rita")
    proposal = Proposal.objects.get(public_id=result.proposals[0])
    assert (proposal.action, proposal.agent, proposal.proposed_by_user) == (ProposalAction.REVISE, None, "rita")
    assert proposal.target == record and "except Fridays" in proposal.body
    assert "Edited in the vault" in proposal.reason
    assert path.read_text() == edited and result.held == [path.relative_to(root).as_posix()]
    assert vault.reconcile(root, "rita").proposals == []  # filed once
    assert Record.objects.filter(status=RecordStatus.APPROVED).count() == 1  # the vault approves nothing
    new = actions.accept_proposal(proposal, actor=reviewer).result_record
    vault.reconcile(root, "rita")
    assert not path.exists()
    assert f"Supersedes: [[{file_name(record)[:-3]}" in note_of(root, new).read_text()


def test_an_edit_made_while_the_reviewer_revised_the_record_keeps_both(db, make_record, agent, reviewer, tmp_path):
    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    vault.reconcile(root, "rita")
    path = note_of(root, record)
    path.write_text(path.read_text().replace("every weekday", "every weekday at noon"))
    other = actions.propose_revision(record, agent=agent, reason="Tagged", tags=["billing", "deploy"])
    newer = actions.accept_proposal(other, actor=reviewer).result_record
    result = vault.reconcile(root, "rita")
    mine = Proposal.objects.get(public_id=result.proposals[0])
    assert mine.target == newer and "at noon" in mine.body  # proposed against the current version
    assert "at noon" in path.read_text()  # the person's file is kept while it waits
    assert note_of(root, newer).exists()  # and the reviewer's decision is in the vault


def test_a_deleted_note_becomes_a_retirement_and_comes_back_if_rejected(db, make_record, reviewer, tmp_path):
    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    vault.reconcile(root, "rita")
    note_of(root, record).unlink()
    result = vault.reconcile(root, "rita")
    proposal = Proposal.objects.get(public_id=result.proposals[0])
    assert proposal.action == ProposalAction.RETIRE and proposal.proposed_by_user == "rita"
    assert not note_of(root, record).exists()  # not recreated while it waits
    actions.reject_proposal(proposal, actor=reviewer, note="Still true.")
    vault.reconcile(root, "rita")
    assert note_of(root, record).exists()
    assert Record.objects.get(pk=record.pk).status == RecordStatus.APPROVED


def test_a_new_note_in_the_inbox_becomes_a_create_proposal_shown_as_pending(db, reviewer, tmp_path):
    root = tmp_path / "vault"
    vault.reconcile(root, "rita")
    (root / "_inbox").mkdir()
    (root / "_inbox" / "Release checklist.md").write_text(
        "---\nspace: team\nkind: procedure\n---\n\nTag the release, wait for CI, then announce it in #releases.\n"
    )
    result = vault.reconcile(root, "rita")
    proposal = Proposal.objects.get(public_id=result.proposals[0])
    assert (proposal.action, proposal.space, proposal.title) == (ProposalAction.CREATE, "team", "Release checklist")
    assert proposal.state == ProposalState.PENDING and Record.objects.count() == 0
    assert not (root / "_inbox" / "Release checklist.md").exists()
    assert (root / "_pending" / f"{proposal.public_id}.md").exists()


def test_a_retired_record_leaves_the_vault_and_a_second_watcher_is_refused(db, make_record, reviewer, tmp_path):
    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    vault.reconcile(root, "rita")
    actions.retire_record(record, actor=reviewer, note="Gone.")
    vault.reconcile(root, "rita")
    assert not note_of(root, record).exists()
    with vault.hold_vault(root), pytest.raises(vault.VaultBusy):
        with vault.hold_vault(root):
            pass


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_watcher_follows_real_file_events_and_decisions(make_record, reviewer, tmp_path):
    """Slow: runs the watcher (watchfiles' OS event thread) for a few seconds
    against a real folder and waits for its passes."""
    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    stop = threading.Event()
    passes: list = []

    def run():
        try:
            vault.watch_vault(root, "rita", stop=stop, tick_ms=200, on_pass=passes.append)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for(lambda: note_of(root, record).exists())
        path = note_of(root, record)
        path.write_text(path.read_text().replace("every weekday", "every weekday before noon"))
        wait_for(lambda: Proposal.objects.filter(proposed_by_user="rita").exists())
        proposal = Proposal.objects.get(proposed_by_user="rita")
        assert proposal.action == ProposalAction.REVISE
        new = actions.accept_proposal(proposal, actor=reviewer).result_record
        wait_for(lambda: note_of(root, new).exists() and not path.exists())
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


def wait_for(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the vault did not catch up in time")
        time.sleep(0.1)


def test_the_vault_command_makes_one_pass_and_refuses_another_persons_vault(db, make_record, second_reviewer, tmp_path):
    import io
    import json

    from django.core.management import call_command
    from django.core.management.base import CommandError

    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    out = io.StringIO()
    call_command("vault", str(root), person="rita", stdout=out)
    assert json.loads(out.getvalue().splitlines()[-1])["written"] >= 2
    assert note_of(root, record).exists()
    with pytest.raises(CommandError, match="rita"):
        call_command("vault", str(root), person="sam", stdout=io.StringIO())
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "diary.md").write_text("my own notes\n")
    with pytest.raises(CommandError, match="not empty"):
        call_command("vault", str(tmp_path / "notes"), person="rita", stdout=io.StringIO())
    assert (tmp_path / "notes" / "diary.md").read_text() == "my own notes\n"


def test_a_vault_edit_shows_in_the_inbox_as_the_persons_revision_with_its_diff(db, make_record, signed_in, tmp_path):
    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    vault.reconcile(root, "rita")
    path = note_of(root, record)
    path.write_text(path.read_text().replace("every weekday", "every weekday except Fridays"))
    proposal_id = vault.reconcile(root, "rita").proposals[0]
    page = signed_in.get("/", {"view": "cards"}).content.decode()
    proposal = Proposal.objects.get(public_id=proposal_id)
    assert f'id="proposal-{proposal.pk}"' in page
    assert "user:rita" in page and "Edited in the vault" in page
    assert "<ins" in page and "Fridays" in page  # the diff against the approved text


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_failed_pass_is_tried_again_without_waiting_for_another_event(make_record, monkeypatch, tmp_path):
    """Slow: runs the watcher thread; its first pass fails (as a locked
    database would make it) and the next tick must try again."""
    from portability.vault import watch

    record = make_record(title="Deploy window for billing")
    calls: list[int] = []
    real = watch.reconcile

    def flaky(root, person):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database is locked")
        return real(root, person)

    monkeypatch.setattr(watch, "reconcile", flaky)
    root = tmp_path / "vault"
    stop = threading.Event()

    def run():
        try:
            vault.watch_vault(root, "rita", stop=stop, tick_ms=200)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for(lambda: note_of(root, record).exists())
    finally:
        stop.set()
        thread.join(timeout=30)
    assert len(calls) >= 2


def test_pending_proposals_show_only_in_spaces_the_person_decides_in(db, create_proposal, django_user_model, tmp_path):
    """A reader of the team space who does not decide there sees its records, not what waits."""
    reader = django_user_model.objects.create_user("ria", "ria@example.com", "a-long-password-3", is_staff=True)
    actions.add_member("team", reader, role="reader", actor=actions.SystemActor("tests"))
    waiting = create_proposal(1)
    vault.reconcile(tmp_path / "ria", "ria")
    vault.reconcile(tmp_path / "rita", "rita")
    assert not (tmp_path / "ria" / "_pending" / f"{waiting.public_id}.md").exists()
    assert (tmp_path / "rita" / "_pending" / f"{waiting.public_id}.md").exists()
