"""The `import_records` management command: JSON Lines in, proposals (or
approved records) out, all or nothing unless --partial."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from reviews import actions
from reviews.models import Agent, AuditEvent, Proposal, ProposalState, Record, RecordStatus

from .conftest import content

PROJECT_DIR = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def _no_reviewer_from_environment(monkeypatch):
    # resolve_reviewer reads $VETTED_REVIEWER; a value leaking in from the
    # developer's shell must not change which user the tests act as.
    monkeypatch.delenv("VETTED_REVIEWER", raising=False)


def line(**overrides) -> str:
    return json.dumps(content(**overrides))


def good_lines(n: int) -> list[str]:
    titles = ["Billing API repository", "Payments service owner", "Deploy window for billing", "Search index rebuild"]
    return [line(title=titles[i]) for i in range(n)]


def write_jsonl(tmp_path, lines, name="records.jsonl") -> Path:
    """Write ``lines`` (str or bytes each) joined by newlines."""
    path = tmp_path / name
    data = b"".join((ln if isinstance(ln, bytes) else ln.encode("utf-8")) + b"\n" for ln in lines)
    path.write_bytes(data)
    return path


def run_import(path, **options):
    """Run the command; return (stdout, stderr, exception or None)."""
    out, err = io.StringIO(), io.StringIO()
    exc = None
    try:
        call_command("import_records", str(path), stdout=out, stderr=err, **options)
    except CommandError as caught:
        exc = caught
    return out.getvalue(), err.getvalue(), exc


def summary_of(stdout: str) -> dict:
    last = stdout.rstrip("\n").splitlines()[-1]
    return json.loads(last)


def row_counts() -> dict:
    return {
        "proposals": Proposal.objects.count(),
        "records": Record.objects.count(),
        "audit": AuditEvent.objects.count(),
        "agents": Agent.objects.count(),
    }


# --------------------------------------------------------------------------- happy paths


@pytest.mark.django_db
def test_valid_file_creates_pending_proposals_from_import_agent(tmp_path):
    path = write_jsonl(tmp_path, good_lines(3))

    stdout, _stderr, exc = run_import(path)

    assert exc is None
    summary = summary_of(stdout)
    assert summary["created"] == 3
    assert summary["errors"] == []
    assert len(summary["ids"]) == 3
    assert all(re.fullmatch(r"prop_[0-9a-f]{12}", pid) for pid in summary["ids"])

    proposals = list(Proposal.objects.filter(public_id__in=summary["ids"]))
    assert len(proposals) == 3
    for p in proposals:
        assert p.state == ProposalState.PENDING
        assert p.action == "create"
        assert p.agent.name == actions.IMPORT_AGENT_NAME
        assert p.source_tool == "import"
        assert p.reason == "Imported from records.jsonl"
    assert Record.objects.count() == 0

    import_agent = Agent.objects.get(name="import")
    assert import_agent.token_digest is None  # tokenless: it cannot authenticate


@pytest.mark.django_db
def test_import_audits_one_proposal_created_per_line_and_import_agent_once(tmp_path):
    first = write_jsonl(tmp_path, good_lines(2), name="first.jsonl")
    second = write_jsonl(tmp_path, [line(title="Search index rebuild")], name="second.jsonl")

    stdout, _, exc = run_import(first)
    assert exc is None
    ids = summary_of(stdout)["ids"]

    created = AuditEvent.objects.filter(event_type="proposal.created")
    assert sorted(created.values_list("proposal_ref", flat=True)) == sorted(ids)
    assert set(created.values_list("actor", flat=True)) == {"import"}
    agent_events = AuditEvent.objects.filter(event_type="agent.created")
    assert agent_events.count() == 1
    assert agent_events.get().snippet == "import"
    assert AuditEvent.objects.count() == 3

    # A second import reuses the agent: no new agent.created event.
    _, _, exc = run_import(second)
    assert exc is None
    assert AuditEvent.objects.filter(event_type="agent.created").count() == 1
    assert AuditEvent.objects.filter(event_type="proposal.created").count() == 3
    assert Agent.objects.filter(name="import").count() == 1


@pytest.mark.django_db
def test_row_reason_and_session_are_used(tmp_path):
    data = content()
    data.update(reason="Copied from the team wiki", session="sess-42")
    path = write_jsonl(tmp_path, [json.dumps(data)])

    stdout, _, exc = run_import(path)

    assert exc is None
    proposal = Proposal.objects.get(public_id=summary_of(stdout)["ids"][0])
    assert proposal.reason == "Copied from the team wiki"
    assert proposal.session == "sess-42"


@pytest.mark.django_db
def test_approve_creates_approved_records_by_the_reviewer(tmp_path, reviewer):
    path = write_jsonl(tmp_path, good_lines(2))

    stdout, stderr, exc = run_import(path, approve=True)

    assert exc is None
    summary = summary_of(stdout)
    assert summary["created"] == 2
    assert summary["errors"] == []
    assert all(re.fullmatch(r"rec_[0-9a-f]{12}", rid) for rid in summary["ids"])
    records = list(Record.objects.filter(public_id__in=summary["ids"]))
    assert len(records) == 2
    for r in records:
        assert r.status == RecordStatus.APPROVED
        assert r.approved_by == reviewer
        assert r.proposed_by.name == "import"
        assert not r.edited_since_approval
    assert Proposal.objects.filter(state=ProposalState.ACCEPTED).count() == 2
    assert not Proposal.objects.filter(state=ProposalState.PENDING).exists()

    accepted = AuditEvent.objects.filter(event_type="proposal.accepted")
    assert accepted.count() == 2
    assert sorted(accepted.values_list("record_ref", flat=True)) == sorted(summary["ids"])
    assert set(accepted.values_list("actor", flat=True)) == {"rita"}
    assert AuditEvent.objects.filter(event_type="proposal.created", actor="import").count() == 2
    assert "2 records approved" in stderr


@pytest.mark.django_db
def test_approve_uses_the_named_reviewer(tmp_path, reviewer, second_reviewer):
    path = write_jsonl(tmp_path, good_lines(1))

    stdout, _, exc = run_import(path, approve=True, reviewer="sam")

    assert exc is None
    record = Record.objects.get(public_id=summary_of(stdout)["ids"][0])
    assert record.approved_by == second_reviewer


@pytest.mark.django_db
def test_blank_lines_are_skipped(tmp_path):
    a, b = good_lines(2)
    path = write_jsonl(tmp_path, ["", a, "   ", "", b, ""])

    stdout, _, exc = run_import(path)

    assert exc is None
    assert summary_of(stdout)["created"] == 2


# --------------------------------------------------------------------------- all or nothing


BAD_LINES = {
    "bad_kind": (line(kind="rumour"), ["kind", "'rumour'", "allowed kinds", "fact", "preference"]),
    "short_body": (line(body="Too short."), ["body", "at least 20"]),
    "invalid_json": ('{"kind": "fact", "title": ', ["not valid JSON"]),
    "non_object": ('["fact", "team"]', ["must be a JSON object"]),
    "invalid_utf8": (b'{"kind": "fact", "title": "Caf\xe9 opening hours"}', ["not valid UTF-8"]),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("bad", list(BAD_LINES), ids=list(BAD_LINES))
def test_bad_line_imports_nothing(tmp_path, bad):
    bad_line, expected_words = BAD_LINES[bad]
    a, b = good_lines(2)
    # line 1 good, line 2 blank (still counted), line 3 bad, line 4 good
    path = write_jsonl(tmp_path, [a, "", bad_line, b])
    before = row_counts()

    stdout, stderr, exc = run_import(path)

    assert isinstance(exc, CommandError)
    assert "nothing was imported" in str(exc)
    assert row_counts() == before
    assert not Agent.objects.filter(name="import").exists()
    summary = summary_of(stdout)
    assert summary["created"] == 0
    assert summary["ids"] == []
    assert [e["line"] for e in summary["errors"]] == [3]
    message = summary["errors"][0]["error"]
    for word in expected_words:
        assert word in message
    assert "line 3:" in stderr


@pytest.mark.django_db(transaction=True)
def test_bad_line_with_approve_imports_nothing(tmp_path, reviewer):
    a, b = good_lines(2)
    path = write_jsonl(tmp_path, [a, line(space="galaxy"), b])
    before = row_counts()

    stdout, _, exc = run_import(path, approve=True)

    assert isinstance(exc, CommandError)
    assert row_counts() == before
    errors = summary_of(stdout)["errors"]
    assert [e["line"] for e in errors] == [2]
    assert "space" in errors[0]["error"] and "'galaxy'" in errors[0]["error"]
    # It says what is allowed without listing every space of the instance.
    assert "not a space you may use" in errors[0]["error"] and "personal, team, system" not in errors[0]["error"]


@pytest.mark.django_db
def test_all_errors_are_reported_sorted_by_line(tmp_path):
    a = good_lines(1)[0]
    path = write_jsonl(
        tmp_path,
        [
            line(kind="rumour", title="First bad record"),  # 1: row error
            "",  # 2: blank
            "not json at all",  # 3: parse error
            a,  # 4: good
            line(title="Second bad record", body="short"),  # 5: row error
            "42",  # 6: parse error (not an object)
        ],
    )

    stdout, _, exc = run_import(path)

    assert isinstance(exc, CommandError)
    assert "4 bad line(s)" in str(exc)
    errors = summary_of(stdout)["errors"]
    assert [e["line"] for e in errors] == [1, 3, 5, 6]
    assert "kind" in errors[0]["error"]
    assert "not valid JSON" in errors[1]["error"]
    assert "body" in errors[2]["error"]
    assert "must be a JSON object" in errors[3]["error"]


@pytest.mark.django_db
def test_line_with_several_problems_names_each_field(tmp_path):
    path = write_jsonl(
        tmp_path, [json.dumps({"kind": "rumour", "space": "galaxy", "title": "Ok title", "body": "short"})]
    )

    stdout, _, exc = run_import(path)

    assert exc is not None
    message = summary_of(stdout)["errors"][0]["error"]
    assert "kind: " in message and "space: " in message and "body: " in message


@pytest.mark.django_db
def test_unknown_field_is_named(tmp_path):
    data = content()
    data["titel"] = data.pop("title")
    path = write_jsonl(tmp_path, [json.dumps(data)])

    stdout, _, exc = run_import(path)

    assert isinstance(exc, CommandError)
    errors = summary_of(stdout)["errors"]
    assert errors[0]["line"] == 1
    assert "titel" in errors[0]["error"]
    assert "unknown field" in errors[0]["error"]
    assert "title" in errors[0]["error"].split("allowed:")[1]
    assert Proposal.objects.count() == 0


# --------------------------------------------------------------------------- --partial


@pytest.mark.django_db
def test_partial_imports_valid_lines_and_reports_bad_ones(tmp_path):
    a, b = good_lines(2)
    path = write_jsonl(tmp_path, [a, "{oops", "", line(kind="rumour", title="Bad kind record"), b])

    stdout, stderr, exc = run_import(path, partial=True)

    assert exc is None
    summary = summary_of(stdout)
    assert summary["created"] == 2
    assert [e["line"] for e in summary["errors"]] == [2, 4]
    assert "not valid JSON" in summary["errors"][0]["error"]
    assert "kind" in summary["errors"][1]["error"]
    assert Proposal.objects.filter(public_id__in=summary["ids"], state=ProposalState.PENDING).count() == 2
    assert Proposal.objects.count() == 2
    assert "(skipped)" in stderr
    assert "2 line(s) skipped" in stderr


@pytest.mark.django_db
def test_partial_bad_row_leaves_no_trace(tmp_path):
    a = good_lines(1)[0]
    path = write_jsonl(tmp_path, [a, line(title="Bad body record", body="short")])

    stdout, _, exc = run_import(path, partial=True)

    assert exc is None
    assert summary_of(stdout)["created"] == 1
    assert AuditEvent.objects.filter(event_type="proposal.created").count() == 1
    assert not Proposal.objects.filter(title="Bad body record").exists()


# --------------------------------------------------------------------------- duplicates


@pytest.mark.django_db
def test_duplicate_lines_in_one_file_are_reported(tmp_path):
    a, b = good_lines(2)
    path = write_jsonl(tmp_path, [a, b, a])

    stdout, _, exc = run_import(path, partial=True)

    assert exc is None
    summary = summary_of(stdout)
    assert summary["created"] == 2
    assert [e["line"] for e in summary["errors"]] == [3]
    message = summary["errors"][0]["error"]
    assert "identical to line 1" in message
    assert summary["ids"][0] in message  # with --partial, the proposal made from line 1 was kept


@pytest.mark.django_db(transaction=True)
def test_duplicate_lines_make_an_all_or_nothing_import_fail(tmp_path):
    a = good_lines(1)[0]
    path = write_jsonl(tmp_path, [a, a])

    stdout, _, exc = run_import(path)

    assert isinstance(exc, CommandError)
    assert [e["line"] for e in summary_of(stdout)["errors"]] == [2]
    assert Proposal.objects.count() == 0


@pytest.mark.django_db
def test_line_identical_to_approved_record_is_refused_with_its_id(tmp_path, record):
    path = write_jsonl(tmp_path, [json.dumps(content())])  # same content as `record`
    before = row_counts()

    stdout, _, exc = run_import(path)

    assert isinstance(exc, CommandError)
    assert row_counts() == before
    message = summary_of(stdout)["errors"][0]["error"]
    assert "identical approved record already exists" in message
    assert record.public_id in message


@pytest.mark.django_db
def test_line_identical_to_pending_proposal_is_refused_with_its_id(tmp_path, agent):
    pending = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    path = write_jsonl(tmp_path, [json.dumps(content())])

    stdout, _, exc = run_import(path)

    assert isinstance(exc, CommandError)
    assert pending.public_id in summary_of(stdout)["errors"][0]["error"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("approve", [False, True], ids=["pending", "approve"])
def test_in_file_duplicate_error_does_not_name_a_rolled_back_id(tmp_path, reviewer, approve):
    a = good_lines(1)[0]
    path = write_jsonl(tmp_path, [a, "", "", a])

    stdout, _, exc = run_import(path, approve=approve)

    assert isinstance(exc, CommandError)
    message = summary_of(stdout)["errors"][0]["error"]
    named = re.findall(r"\b(?:prop|rec)_[0-9a-f]{12}\b", message)
    exists = all(
        Proposal.objects.filter(public_id=i).exists() or Record.objects.filter(public_id=i).exists() for i in named
    )
    assert exists or "line 1" in message, message


# --------------------------------------------------------------------------- --agent


@pytest.mark.django_db
def test_agent_option_attributes_proposals_to_that_agent(tmp_path, agent):
    path = write_jsonl(tmp_path, good_lines(2))

    stdout, _, exc = run_import(path, agent="claude-code")

    assert exc is None
    ids = summary_of(stdout)["ids"]
    assert set(Proposal.objects.filter(public_id__in=ids).values_list("agent__name", flat=True)) == {"claude-code"}
    assert not Agent.objects.filter(name="import").exists()
    assert set(AuditEvent.objects.filter(event_type="proposal.created").values_list("actor", flat=True)) == {
        "claude-code"
    }


@pytest.mark.django_db
def test_unknown_agent_name_is_refused(tmp_path, reviewer):
    path = write_jsonl(tmp_path, good_lines(1))
    before = row_counts()

    _, _, exc = run_import(path, agent="nobody")

    assert isinstance(exc, CommandError)
    assert "No agent named 'nobody'" in str(exc)
    assert "create_agent" in str(exc)
    assert row_counts() == before


@pytest.mark.django_db
def test_agent_without_the_line_space_gets_a_line_error(tmp_path, team_agent):
    path = write_jsonl(
        tmp_path, [line(space="team", title="Team record here"), line(space="personal", title="Personal record here")]
    )

    stdout, _, exc = run_import(path, agent="team-bot", partial=True)

    assert exc is None
    summary = summary_of(stdout)
    assert summary["created"] == 1
    assert [e["line"] for e in summary["errors"]] == [2]
    message = summary["errors"][0]["error"]
    assert "'team-bot' may not write to space 'personal'" in message
    assert "its spaces: team" in message


# --------------------------------------------------------------------------- files and reviewers


@pytest.mark.django_db
@pytest.mark.parametrize("lines", [[], ["", "  ", ""]], ids=["zero_bytes", "only_blank_lines"])
def test_empty_file_is_refused(tmp_path, lines):
    path = write_jsonl(tmp_path, lines)
    if not lines:
        path.write_bytes(b"")

    stdout, _, exc = run_import(path)

    assert isinstance(exc, CommandError)
    assert "holds no records" in str(exc)
    assert str(path) in str(exc)
    assert Agent.objects.count() == 0


@pytest.mark.django_db
def test_missing_file_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "nope.jsonl"

    _, _, exc = run_import(path)

    assert isinstance(exc, CommandError)
    assert str(exc) == f"Cannot read {path}: No such file or directory."


@pytest.mark.django_db
def test_reads_standard_input_when_file_is_dash(monkeypatch):
    data = ("\n".join(good_lines(2)) + "\n").encode("utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))

    stdout, _, exc = run_import("-")

    assert exc is None
    assert summary_of(stdout)["created"] == 2


@pytest.mark.django_db
def test_approve_without_any_user_says_how_to_create_one(tmp_path):
    path = write_jsonl(tmp_path, good_lines(1))

    _, _, exc = run_import(path, approve=True)

    assert isinstance(exc, CommandError)
    assert "No reviewer account exists" in str(exc)
    assert "createsuperuser" in str(exc)
    assert Proposal.objects.count() == 0


@pytest.mark.django_db
def test_approve_with_two_superusers_asks_for_reviewer(tmp_path, reviewer, second_reviewer):
    path = write_jsonl(tmp_path, good_lines(1))

    _, _, exc = run_import(path, approve=True)

    assert isinstance(exc, CommandError)
    assert "--reviewer" in str(exc)
    assert Proposal.objects.count() == 0


@pytest.mark.django_db
def test_approve_with_unknown_reviewer_is_refused(tmp_path, reviewer):
    path = write_jsonl(tmp_path, good_lines(1))

    _, _, exc = run_import(path, approve=True, reviewer="nobody")

    assert isinstance(exc, CommandError)
    assert "No user named 'nobody'" in str(exc)


@pytest.mark.django_db
def test_approve_reviewer_from_environment(tmp_path, reviewer, second_reviewer, monkeypatch):
    monkeypatch.setenv("VETTED_REVIEWER", "sam")
    path = write_jsonl(tmp_path, good_lines(1))

    stdout, _, exc = run_import(path, approve=True)

    assert exc is None
    assert Record.objects.get(public_id=summary_of(stdout)["ids"][0]).approved_by == second_reviewer


# --------------------------------------------------------------------------- output


class _FakeTerminal(io.StringIO):
    def isatty(self):  # tqdm only draws on a terminal (disable=None)
        return True


@pytest.mark.django_db
def test_progress_bar_does_not_pollute_stdout(tmp_path, monkeypatch):
    fake_stderr, fake_stdout = _FakeTerminal(), _FakeTerminal()
    monkeypatch.setattr(sys, "stderr", fake_stderr)
    monkeypatch.setattr(sys, "stdout", fake_stdout)
    path = write_jsonl(tmp_path, good_lines(3))

    stdout, _, exc = run_import(path)

    assert exc is None
    # the bar was drawn, on the process's stderr
    assert "import" in fake_stderr.getvalue()
    assert "3/3" in fake_stderr.getvalue()
    # and nowhere near stdout: the command's stdout is exactly one JSON line
    assert fake_stdout.getvalue() == ""
    lines = stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["created"] == 3


@pytest.mark.django_db
def test_failed_import_stdout_is_only_the_json_summary(tmp_path):
    path = write_jsonl(tmp_path, [line(kind="rumour")])

    stdout, stderr, exc = run_import(path)

    assert exc is not None
    lines = stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["errors"][0]["line"] == 1
    assert "line 1:" in stderr


# --------------------------------------------------------------------------- a real process


def _manage(args, env, **kw):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


@pytest.mark.slow
def test_import_runs_as_a_real_process(migrated, tmp_path):
    home = tmp_path / "home"
    # A fresh install: a copy of the session's migrated database (tests/home_support.py).
    env = {k: val for k, val in migrated.home(home).items() if k not in {"VETTED_REVIEWER", "VETTED_SECRET_KEY"}}
    env.update(PYTHONUNBUFFERED="1")
    assert (home / "vetted.sqlite3").exists()

    good = write_jsonl(tmp_path, good_lines(2), name="good.jsonl")
    ok = _manage(["import_records", str(good)], env)
    assert ok.returncode == 0, ok.stderr
    stdout_lines = ok.stdout.splitlines()
    assert len(stdout_lines) == 1
    summary = json.loads(stdout_lines[-1])
    assert summary["created"] == 2
    assert summary["errors"] == []
    assert all(i.startswith("prop_") for i in summary["ids"])

    bad = write_jsonl(
        tmp_path, [line(title="Another good record"), line(kind="rumour", title="Bad kind")], name="bad.jsonl"
    )
    failed = _manage(["import_records", str(bad)], env)
    assert failed.returncode == 1
    summary = json.loads(failed.stdout.splitlines()[-1])
    assert summary["created"] == 0
    assert [e["line"] for e in summary["errors"]] == [2]
    assert "nothing was imported" in failed.stderr
    assert "Traceback" not in failed.stderr

    # the failed import changed nothing: the earlier proposals are still the only ones
    listed = _manage(["review", "list", "--json"], env)
    assert listed.returncode == 0, listed.stderr
    assert sorted(json.loads(ln)["id"] for ln in listed.stdout.splitlines()) == sorted(
        json.loads(ok.stdout.splitlines()[-1])["ids"]
    )
