"""Markdown portability: `export_markdown` (one note per approved record,
deterministic, space-safe) and `import_markdown` (notes and instruction files
in as proposals; a re-imported export is a no-op, edits become revisions)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from portability import markdown_io
from reviews import actions
from reviews.checksum import content_checksum
from reviews.models import (
    AuditEvent,
    Proposal,
    ProposalAction,
    ProposalState,
    Record,
    RecordStatus,
)

from .conftest import GOOD_BODY


@pytest.fixture(autouse=True)
def _no_reviewer_from_environment(monkeypatch):
    monkeypatch.delenv("VETTED_REVIEWER", raising=False)


def run(command, *args, **options):
    """Run a command; return (stdout, stderr, CommandError or None)."""
    out, err = io.StringIO(), io.StringIO()
    exc = None
    try:
        call_command(command, *[str(a) for a in args], stdout=out, stderr=err, **options)
    except CommandError as caught:
        exc = caught
    return out.getvalue(), err.getvalue(), exc


def summary_of(stdout: str) -> dict:
    return json.loads(stdout.rstrip("\n").splitlines()[-1])


def md_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.md"))}


def counts() -> tuple[int, int, int]:
    return Proposal.objects.count(), Record.objects.count(), AuditEvent.objects.count()


@pytest.fixture
def team_records(make_record):
    return [
        make_record(title="Billing API repository", tags=["billing", "repos"]),
        make_record(
            title="Deploy window for billing",
            body="Billing deploys happen on weekdays between 10:00 and 15:00 Berlin time, never on Fridays.",
            tags=["deploy"],
            kind="procedure",
        ),
        make_record(
            title="Search index rebuild",
            body="Rebuild the search index with `manage.py reindex` after "
            "changing the embedding model.\n\n## Notes\n\nIt takes about a minute per 10k records.",
            tags=[],
        ),
    ]


# --------------------------------------------------------------------------- export


def test_export_writes_one_note_per_approved_record_with_front_matter(db, team_records, tmp_path):
    out, err, exc = run("export_markdown", tmp_path / "out", space="team")
    assert exc is None, err
    files = md_files(tmp_path / "out")
    assert len(files) == 3
    billing = team_records[0]
    name = f"billing-api-repository--{billing.public_id}.md"
    text = files[name].decode()
    front, body = markdown_io.split_front_matter(text)
    assert list(front) == [
        "id",
        "title",
        "kind",
        "space",
        "status",
        "tags",
        "review_by",
        "approved_at",
        "approved_by",
        "verified_at",
        "checksum",
        "supersedes",
        "superseded_by",
        "provenance",
    ]
    assert front["id"] == billing.public_id and front["space"] == "team"
    assert front["tags"] == ["billing", "repos"]
    assert "tags:\n- billing\n- repos\n" in text  # a YAML list, as Obsidian reads it
    assert front["checksum"] == billing.approved_checksum
    assert front["approved_by"] == "rita"
    assert front["provenance"] == {
        "proposed_by": "claude-code",
        "source_tool": "claude-code",
        "reason": "Seen in the repo README",
    }
    assert body.strip() == billing.body
    summary = summary_of(out)
    assert summary["records"] == 3 and summary["written"] == 3 and summary["removed"] == []
    manifest = json.loads((tmp_path / "out" / ".vetted-export.json").read_text())
    assert manifest["space"] == "team" and manifest["records"] == 3


def test_export_twice_gives_identical_bytes_and_stable_names(db, team_records, tmp_path):
    run("export_markdown", tmp_path / "a", space="team")
    first = md_files(tmp_path / "a")
    out, _err, _exc = run("export_markdown", tmp_path / "a", space="team")
    assert md_files(tmp_path / "a") == first
    assert summary_of(out)["written"] == 0 and summary_of(out)["unchanged"] == 3
    run("export_markdown", tmp_path / "b", space="team")
    assert md_files(tmp_path / "b") == first  # another folder, same bytes
    manifest_a = json.loads((tmp_path / "a" / ".vetted-export.json").read_text())
    manifest_b = json.loads((tmp_path / "b" / ".vetted-export.json").read_text())
    manifest_a.pop("exported_at"), manifest_b.pop("exported_at")
    assert manifest_a == manifest_b


def test_equal_titles_get_unique_names(db, make_record, tmp_path):
    one = make_record(title="On-call rota")
    two = make_record(title="On-call rota", body="The on-call rota rotates every Monday at nine in the morning.")
    run("export_markdown", tmp_path, space="team")
    assert sorted(md_files(tmp_path)) == sorted(
        [f"on-call-rota--{one.public_id}.md", f"on-call-rota--{two.public_id}.md"]
    )


def test_slugify():
    assert markdown_io.slugify("Déjà vu: the *API* / v2.1!") == "deja-vu-the-api-v2-1"
    assert markdown_io.slugify("日本語") == "record"
    long = markdown_io.slugify("word " * 40)
    assert len(long) <= markdown_io.SLUG_MAX and not long.endswith("-")


def test_team_export_contains_no_personal_content(db, make_record, reviewer, tmp_path):
    team = make_record(
        title="Team VPN endpoint",
        body="The team VPN endpoint is vpn.acme.example on port 1194 for everyone.",
        tags=["vpn"],
    )
    secret = make_record(
        space="personal",
        title="Personal VPN endpoint",
        tags=["vpn", "zebrafish"],
        body="My personal VPN endpoint is wireguard zebrafish-peer on port 51820 at home.",
    )
    diary = make_record(
        space="personal",
        title="Dentist appointment",
        tags=["health"],
        body="Dentist appointment with doctor Quinlivan on Tuesday, bring the insurance card.",
    )
    # A personal record moved into team: its team version may not point back at the personal id.
    moved_from = make_record(
        space="personal",
        title="Coffee machine descaling",
        body="Descale the office coffee machine every second Thursday with citric acid.",
    )
    moved = actions.move_record(moved_from, actor=reviewer, space="team", note="Useful for the whole team")
    _out, err, exc = run("export_markdown", tmp_path, space="team", include_history=True)
    assert exc is None, err
    everything = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()).decode()
    assert team.public_id in everything and moved.public_id in everything
    for personal in (secret, diary, moved_from):
        assert personal.public_id not in everything
    for word in ("zebrafish", "51820", "Quinlivan", "Personal VPN", "Dentist", "personal"):
        assert word not in everything, word
    assert all(markdown_io.split_front_matter(p.read_text())[0]["space"] == "team" for p in tmp_path.rglob("*.md"))


def test_export_refuses_a_folder_with_another_spaces_files(db, make_record, tmp_path):
    make_record(title="Team fact one")
    make_record(space="personal", title="Personal fact one")
    run("export_markdown", tmp_path / "personal", space="personal")
    before = md_files(tmp_path / "personal")
    _out, _err, exc = run("export_markdown", tmp_path / "personal", space="team")
    assert exc is not None and "another folder" in str(exc) and "personal" in str(exc)
    assert md_files(tmp_path / "personal") == before
    # Without the manifest the files' own front matter still says so.
    (tmp_path / "personal" / ".vetted-export.json").unlink()
    _out, _err, exc = run("export_markdown", tmp_path / "personal", space="team")
    assert exc is not None and "personal" in str(exc)
    assert md_files(tmp_path / "personal") == before


def test_export_removes_files_of_records_no_longer_approved_and_keeps_other_notes(db, team_records, reviewer, tmp_path):
    (tmp_path / "my-own-note.md").write_text("# Mine\n\nA note of my own that Vetted did not write.\n")
    run("export_markdown", tmp_path, space="team")
    gone = team_records[1]
    actions.retire_record(gone, actor=reviewer, note="No longer true")
    out, _err, exc = run("export_markdown", tmp_path, space="team")
    assert exc is None
    names = set(md_files(tmp_path))
    assert f"deploy-window-for-billing--{gone.public_id}.md" not in names
    assert "my-own-note.md" in names
    assert summary_of(out)["removed"] == [f"deploy-window-for-billing--{gone.public_id}.md"]
    run("export_markdown", tmp_path, space="team", include_history=True)
    assert f"history/deploy-window-for-billing--{gone.public_id}.md" in md_files(tmp_path)


def test_export_will_not_overwrite_unimported_edits(db, team_records, reviewer, tmp_path):
    run("export_markdown", tmp_path, space="team")
    path = tmp_path / f"billing-api-repository--{team_records[0].public_id}.md"
    path.write_text(path.read_text().replace("every weekday", "every Tuesday"))
    actions.retire_record(team_records[0], actor=reviewer, note="Moved to the wiki")
    _out, _err, exc = run("export_markdown", tmp_path, space="team")
    assert exc is not None and path.name in str(exc) and "--force" in str(exc)
    assert path.exists()
    _out, _err, exc = run("export_markdown", tmp_path, space="team", force=True)
    assert exc is None and not path.exists()


# --------------------------------------------------------------------------- re-import


def test_export_then_import_is_a_no_op(db, team_records, reviewer, tmp_path):
    actions.revise_record(team_records[2], actor=reviewer, changes={"tags": ["search"]})  # history exists too
    run("export_markdown", tmp_path, space="team", include_history=True)
    assert (tmp_path / "history").is_dir()
    before = counts()
    out, err, exc = run("import_markdown", tmp_path)
    assert exc is None, err
    summary = summary_of(out)
    assert summary["unchanged"] == 4 and summary["new"] == 0 and summary["revisions"] == 0
    assert summary["errors"] == [] and summary["duplicates"] == []
    assert counts() == before  # no proposal, no record, not even an audit event (or the import agent)
    assert "0 new" in out and "4 unchanged" in out


def test_an_edited_exported_file_becomes_one_revise_proposal(db, team_records, tmp_path):
    run("export_markdown", tmp_path, space="team")
    target = team_records[0]
    path = tmp_path / f"billing-api-repository--{target.public_id}.md"
    new_body = "The billing API lives in the acme/billing-api repository and deploys from main every Tuesday."
    path.write_text(path.read_text().replace(target.body, new_body))
    before = Proposal.objects.count()
    out, err, exc = run("import_markdown", tmp_path, space="team")
    assert exc is None, err
    assert summary_of(out)["revisions"] == 1 and summary_of(out)["unchanged"] == 2
    assert Proposal.objects.count() == before + 1
    proposal = Proposal.objects.latest("id")
    assert proposal.action == ProposalAction.REVISE and proposal.state == ProposalState.PENDING
    assert proposal.target == target and proposal.body == new_body and proposal.agent.name == "import"
    assert proposal.title == target.title and proposal.tags == target.tags
    target.refresh_from_db()
    assert target.status == RecordStatus.APPROVED and target.body == GOOD_BODY  # never overwritten
    # Importing the same edit again proposes nothing new: it is reported as a duplicate.
    out, _err, _exc = run("import_markdown", tmp_path, space="team")
    assert summary_of(out)["duplicates"] == [{"file": path.name, "existing_id": proposal.public_id}]
    assert Proposal.objects.count() == before + 1
    # Once the edit is in Vetted, the next export may put the approved text back.
    _out, err, exc = run("export_markdown", tmp_path, space="team")
    assert exc is None, err
    assert new_body not in path.read_text() and target.body in path.read_text()


def test_an_edit_of_a_superseded_version_is_proposed_against_its_successor(db, team_records, reviewer, tmp_path):
    run("export_markdown", tmp_path, space="team")
    old = team_records[0]
    successor = actions.revise_record(old, actor=reviewer, changes={"tags": ["billing", "repos", "api"]})
    path = tmp_path / f"billing-api-repository--{old.public_id}.md"
    path.write_text(path.read_text().replace("every weekday", "every Tuesday"))
    out, err, exc = run("import_markdown", tmp_path, space="team")
    assert exc is None, err
    proposal = Proposal.objects.get(public_id=summary_of(out)["ids"][0])
    assert proposal.target == successor and "every Tuesday" in proposal.body
    assert old.public_id in proposal.reason and successor.public_id in proposal.reason


def test_import_refuses_to_cross_spaces(db, make_record, tmp_path):
    personal = make_record(space="personal", title="Personal fact one")
    run("export_markdown", tmp_path, space="personal")
    path = next(tmp_path.glob("*.md"))
    path.write_text(path.read_text().replace("every weekday", "every Sunday"))
    before = counts()
    out, _err, exc = run("import_markdown", tmp_path, space="team")
    assert exc is not None
    assert summary_of(out)["errors"][0]["file"] == path.name and "space" in summary_of(out)["errors"][0]["error"]
    assert counts() == before
    assert Proposal.objects.filter(target=personal).count() == 0


# --------------------------------------------------------------------------- notes and instruction files


def test_an_obsidian_folder_imports_as_pending_proposals(db, reviewer, tmp_path):
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "app.md").write_text("ignored: hidden folder")
    (tmp_path / "projects" / "billing").mkdir(parents=True)
    (tmp_path / "projects" / "billing" / "Stripe webhooks.md").write_text(
        "---\ntitle: Stripe webhook secret rotation\ntags: [billing, Stripe]\nkind: procedure\n---\n\n"
        "Rotate the Stripe webhook secret in the dashboard, then update STRIPE_WEBHOOK_SECRET #security.\n"
    )
    (tmp_path / "projects" / "Release train.md").write_text(
        "---\ntags: releases, process\naliases: [train]\n---\n# Release train schedule\n\n"
        "We cut a release branch every second Wednesday and ship it the Monday after. #releases/weekly\n"
        "See issue #123 and `#not-a-tag` in code.\n"
    )
    (tmp_path / "Coffee machine.md").write_text(
        "The office coffee machine needs descaling every second Thursday with citric acid.\n"
    )
    out, err, exc = run("import_markdown", tmp_path, space="team")
    assert exc is None, err
    summary = summary_of(out)
    assert summary["new"] == 3 and summary["errors"] == []
    proposals = {p.title: p for p in Proposal.objects.all()}
    assert set(proposals) == {"Stripe webhook secret rotation", "Release train schedule", "Coffee machine"}
    assert all(
        p.state == ProposalState.PENDING and p.agent.name == "import" and p.space == "team" for p in proposals.values()
    )
    stripe = proposals["Stripe webhook secret rotation"]
    assert stripe.kind == "procedure" and stripe.tags == ["billing", "security", "stripe"]
    train = proposals["Release train schedule"]
    assert train.kind == "fact" and train.tags == ["process", "releases", "releases/weekly"]
    assert not train.body.startswith("#")  # the heading became the title
    assert proposals["Coffee machine"].tags == []
    assert Record.objects.count() == 0


def test_kind_option_and_default_space(db, reviewer, tmp_path):
    (tmp_path / "note.md").write_text("Our team prefers squash merges for every pull request on main.\n")
    _out, err, exc = run("import_markdown", tmp_path, kind="preference")
    assert exc is None, err
    proposal = Proposal.objects.get()
    assert proposal.kind == "preference" and proposal.space == "personal"  # the safest space by default


CLAUDE_BULLETS = """# Project instructions

- Use pnpm for every install, never npm or yarn: the lockfile is pnpm-lock.yaml.
- Run the whole test suite with `make test` before pushing a branch.
  It takes about two minutes on a laptop.
* Database migrations go in their own pull request, reviewed by the data team. #database
- Be terse.
"""

CLAUDE_SECTIONS = """# Agent guide

## Code style

Format Python with ruff and keep lines under 100 characters in every module.

## Deployments

Deploy with the release pipeline only; manual deploys to production are forbidden.

## Secrets

Secrets live in the vault under team/billing and are never written to files.
"""


def test_claude_md_bullets_become_one_proposal_each(db, reviewer, tmp_path):
    (tmp_path / "CLAUDE.md").write_text(CLAUDE_BULLETS)
    out, err, exc = run("import_markdown", tmp_path / "CLAUDE.md", space="team")
    assert exc is None, err
    summary = summary_of(out)
    assert summary["new"] == 3
    assert summary["skipped"] == [{"file": "CLAUDE.md item 4", "reason": summary["skipped"][0]["reason"]}]
    assert "too short" in summary["skipped"][0]["reason"]
    titles = [p.title for p in Proposal.objects.order_by("id")]
    assert titles == [
        "Use pnpm for every install, never npm or yarn",
        "Run the whole test suite with make test before pushing a branch",
        "Database migrations go in their own pull request, reviewed by the data team",
    ]
    second = Proposal.objects.order_by("id")[1]
    assert second.body == (
        "Run the whole test suite with `make test` before pushing a branch.\nIt takes about two minutes on a laptop."
    )
    assert second.kind == "procedure"
    assert Proposal.objects.order_by("id")[2].tags == ["database"]


def test_agents_md_sections_become_one_proposal_each(db, reviewer, tmp_path):
    (tmp_path / "AGENTS.md").write_text(CLAUDE_SECTIONS)
    out, err, exc = run("import_markdown", tmp_path, space="team")
    assert exc is None, err
    assert summary_of(out)["new"] == 3
    proposals = list(Proposal.objects.order_by("id"))
    assert [p.title for p in proposals] == ["Code style", "Deployments", "Secrets"]
    assert proposals[1].body == "Deploy with the release pipeline only; manual deploys to production are forbidden."


def test_approve_creates_approved_records(db, reviewer, tmp_path):
    (tmp_path / "AGENTS.md").write_text(CLAUDE_SECTIONS)
    (tmp_path / "note.md").write_text("# Office wifi\n\nThe guest wifi password rotates on the first of each month.\n")
    out, err, exc = run("import_markdown", tmp_path, space="team", approve=True)
    assert exc is None, err
    summary = summary_of(out)
    assert summary["new"] == 4 and summary["approved"] is True
    records = Record.objects.filter(public_id__in=summary["ids"])
    assert records.count() == 4
    assert all(
        r.status == RecordStatus.APPROVED and r.approved_by == reviewer and r.proposed_by.name == "import"
        for r in records
    )
    assert not Proposal.objects.filter(state=ProposalState.PENDING).exists()


def test_bad_files_are_reported_by_name_and_the_rest_imported(db, reviewer, tmp_path):
    (tmp_path / "good.md").write_text("The staging database is refreshed from production every Sunday night.\n")
    (tmp_path / "latin1.md").write_bytes("Caf\xe9 opening hours are nine to five on weekdays.".encode("latin-1"))
    (tmp_path / "empty.md").write_text("  \n\n")
    (tmp_path / "huge.md").write_text("The long note repeats many different words. " * 30_000)
    (tmp_path / "long-body.md").write_text("A body that is too long for one record, with varied words. " * 400)
    (tmp_path / "broken.md").write_text("---\ntitle: [unclosed\n---\nSome body text that is long enough to pass.\n")
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "good.md").write_text(
        "The staging database is refreshed from production every Sunday night.\n"
    )
    out, err, exc = run("import_markdown", tmp_path, space="team")
    assert exc is not None and exc.returncode == 1  # errors: exit 1, after the summary
    summary = summary_of(out)
    errors = {e["file"]: e["error"] for e in summary["errors"]}
    assert set(errors) == {"latin1.md", "empty.md", "huge.md", "long-body.md", "broken.md"}
    assert "UTF-8" in errors["latin1.md"] and errors["empty.md"] == "empty"
    assert "too long" in errors["huge.md"] and "at most 20000" in errors["long-body.md"]
    assert "YAML" in errors["broken.md"]
    assert summary["new"] == 1
    assert summary["duplicates"] == [{"file": "copy/good.md", "existing_id": summary["ids"][0]}]
    for name in errors:
        assert name in err


def test_strict_imports_nothing_when_a_file_is_bad(db, reviewer, tmp_path):
    (tmp_path / "good.md").write_text("The staging database is refreshed from production every Sunday night.\n")
    (tmp_path / "empty.md").write_text("")
    before = counts()
    out, _err, exc = run("import_markdown", tmp_path, space="team", strict=True)
    assert exc is not None and "nothing was imported" in str(exc)
    assert summary_of(out)["ids"] == [] and summary_of(out)["errors"][0]["file"] == "empty.md"
    assert counts() == before


def test_command_errors(db, reviewer, tmp_path):
    _out, _err, exc = run("import_markdown", tmp_path / "missing")
    assert exc is not None and "not a file or folder" in str(exc)
    _out, _err, exc = run("import_markdown", tmp_path)
    assert exc is not None and "no Markdown files" in str(exc)
    _out, _err, exc = run("import_markdown", tmp_path, kind="gossip")
    assert exc is not None and "Unknown kind" in str(exc)
    (tmp_path / "file.md").write_text("x")
    _out, _err, exc = run("export_markdown", tmp_path / "file.md", space="team")
    assert exc is not None and "not a folder" in str(exc)


def test_approve_turns_an_edited_export_into_a_new_version(db, team_records, reviewer, tmp_path):
    run("export_markdown", tmp_path, space="team")
    target = team_records[1]
    path = tmp_path / f"deploy-window-for-billing--{target.public_id}.md"
    path.write_text(path.read_text().replace("- deploy\n", "- deploy\n- billing\n"))
    out, err, exc = run("import_markdown", tmp_path, approve=True)  # space from the manifest
    assert exc is None, err
    new = Record.objects.get(public_id=summary_of(out)["ids"][0])
    target.refresh_from_db()
    assert target.status == RecordStatus.SUPERSEDED and target.superseded_by == new
    assert new.tags == ["billing", "deploy"] and new.body == target.body and new.space == "team"
    # The next export replaces the old note with the new version's.
    out, _err, exc = run("export_markdown", tmp_path, space="team")
    assert exc is None
    assert summary_of(out)["removed"] == [path.name]
    assert (tmp_path / f"deploy-window-for-billing--{new.public_id}.md").exists()


def test_a_disputed_record_moves_to_history(db, team_records, agent, tmp_path):
    disputed = team_records[0]
    actions.dispute_record(disputed, agent=agent, reason="The repository was renamed last week")
    run("export_markdown", tmp_path, space="team", include_history=True)
    files = md_files(tmp_path)
    name = f"billing-api-repository--{disputed.public_id}.md"
    assert f"history/{name}" in files and name not in files
    assert markdown_io.split_front_matter(files[f"history/{name}"].decode())[0]["status"] == "disputed"


def test_multi_line_provenance_round_trips(db, agent, reviewer, tmp_path):
    proposal = actions.propose_create(
        agent=agent,
        reason="Two reasons:\nfirst line\n  second: indented",
        kind="fact",
        space="team",
        title="Build cache location",
        body="The build cache lives in /var/cache/acme and is cleared every night.",
    )
    actions.accept_proposal(proposal, actor=reviewer)
    run("export_markdown", tmp_path, space="team")
    text = next(tmp_path.glob("*.md")).read_text()
    assert "reason: |-\n    Two reasons:\n" in text
    front, _ = markdown_io.split_front_matter(text)
    assert front["provenance"]["reason"] == "Two reasons:\nfirst line\n  second: indented"
    before = counts()
    out, _err, _exc = run("import_markdown", tmp_path)
    assert summary_of(out)["unchanged"] == 1 and counts() == before


def test_an_old_version_that_breaks_todays_rules_still_reimports_as_unchanged(db, team_records, tmp_path):
    old = team_records[0]
    Record.objects.filter(pk=old.pk).update(body="Too short now.")  # as if approved under older rules
    Record.objects.filter(pk=old.pk).update(
        approved_checksum=content_checksum(
            kind=old.kind, space=old.space, title=old.title, body="Too short now.", tags=old.tags
        )
    )
    run("export_markdown", tmp_path, space="team")
    before = counts()
    out, err, exc = run("import_markdown", tmp_path)
    assert exc is None, err
    assert summary_of(out)["unchanged"] == 3 and counts() == before
