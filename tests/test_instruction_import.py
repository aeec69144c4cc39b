"""Instruction files in as proposals: the project's sample repository under
tests/data/instructions/ (CLAUDE.md with @imports, AGENTS.md, GEMINI.md,
copilot-instructions.md, Cursor .mdc rules, .windsurfrules), copied into a
temporary folder and read by the real command and the real upload page."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from portability import instructions
from portability.markdown_io.notes import MAX_FILE_BYTES
from reviews.models import Proposal, ProposalState, Record

SAMPLES = Path(__file__).parent / "data" / "instructions"


@pytest.fixture(autouse=True)
def _no_reviewer_from_environment(monkeypatch):
    monkeypatch.delenv("VETTED_REVIEWER", raising=False)


@pytest.fixture
def samples(tmp_path) -> Path:
    """A copy of the sample folder (the shop repository beside a folder outside it)."""
    shutil.copytree(SAMPLES, tmp_path / "instructions")
    return tmp_path / "instructions"


def run(*args, **options):
    out, err = io.StringIO(), io.StringIO()
    exc = None
    try:
        call_command("import_instructions", *[str(a) for a in args], stdout=out, stderr=err, **options)
    except CommandError as caught:
        exc = caught
    return json.loads(out.getvalue().rstrip("\n").splitlines()[-1]), err.getvalue(), exc


def by_place() -> dict[str, Proposal]:
    return {f"{p.metadata['import_file']}:{p.metadata['import_line']}": p for p in Proposal.objects.all()}


def test_every_kind_of_instruction_file_becomes_pending_proposals_with_file_and_line(db, reviewer, samples):
    summary, err, exc = run(samples / "shop", space="team")
    assert exc is not None and exc.returncode == 1  # two imports point outside the folder: refused, rest imported
    files = set(summary["files"])
    assert files == {
        "CLAUDE.md",
        "AGENTS.md",
        "GEMINI.md",
        ".windsurfrules",
        ".github/copilot-instructions.md",
        ".cursor/rules/python-style.mdc",
        ".cursor/rules/storefront.mdc",
        "docs/testing.md",
    }
    assert Record.objects.count() == 0
    assert set(Proposal.objects.values_list("state", flat=True)) == {ProposalState.PENDING}
    places = by_place()
    assert places["CLAUDE.md:12"].title.startswith("Run the backend tests with make test")
    assert places["AGENTS.md:5"].body.startswith("Install the toolchain")
    assert places[".windsurfrules:3"].title.startswith("Deploys go out through")
    assert places[".github/copilot-instructions.md:8"].body.startswith("When writing tests, use pytest fixtures")
    storefront = places[".cursor/rules/storefront.mdc:12"]
    assert storefront.metadata["applies_to"] == ["web/src/**/*.tsx", "web/src/**/*.ts"]
    assert "applies to web/src/**/*.tsx" in storefront.reason
    assert places[".cursor/rules/python-style.mdc:7"].title.startswith("Prefer select_related")
    assert "CLAUDE.md line 27" in places["docs/testing.md:3"].reason  # the file that imported it
    assert "outside the folder given" in err and "GUIDE.md" in err
    assert not Proposal.objects.filter(body__contains="must never be imported").exists()


def test_a_text_repeated_across_files_is_one_proposal_naming_every_place(db, reviewer, samples):
    run(samples / "shop", space="team")
    repeated = Proposal.objects.filter(body__startswith="Run the backend tests with `make test`")
    assert repeated.count() == 1
    assert repeated[0].metadata["import_places"] == ["CLAUDE.md:12", "AGENTS.md:10"]
    assert "CLAUDE.md:12, AGENTS.md:10" in repeated[0].reason
    style = Proposal.objects.get(body__startswith="Prefer small pure functions")
    assert style.metadata["import_places"] == ["CLAUDE.md:21", ".cursor/rules/python-style.mdc:8"]


def test_the_kind_is_guessed_from_the_words_and_the_heading(db, reviewer, samples):
    run(samples / "shop", space="team")
    places = by_place()
    assert places["CLAUDE.md:22"].kind == "preference"  # "rather than"
    assert places["AGENTS.md:5"].kind == "procedure"  # a numbered step
    assert places["CLAUDE.md:7"].kind == "fact"  # "Project overview"
    assert places[".cursor/rules/python-style.mdc:9"].kind == "fact"  # "are stored as"
    assert instructions.detect_kind("Prefer tabs over spaces in Makefiles.", None) == "preference"
    assert instructions.detect_kind("The API lives at api.example.com behind the VPN.", None) == "fact"
    assert instructions.detect_kind("Run `make lint` before pushing.", "Notes") == "procedure"


def test_imports_are_followed_once_and_only_inside_the_folder_given(db, reviewer, samples):
    shop = samples / "shop"
    (shop / "docs" / "testing.md").write_text(
        (shop / "docs" / "testing.md").read_text() + "\nMore in @nested.md\n", encoding="utf-8"
    )
    (shop / "docs" / "nested.md").write_text("- A nested import is never followed, only the first level is.\n")
    summary, _err, _exc = run(shop, space="team")
    assert "docs/nested.md" not in summary["files"]
    refused = {r["reason"] for r in summary["refused"]}
    assert any("@~/.claude/shop-notes.md" in r for r in refused)
    assert any("@../legacy/GUIDE.md" in r for r in refused)


def test_binary_oversized_and_escaping_files_are_refused_by_name_and_the_rest_imported(db, reviewer, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".cursor" / "rules").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("- Run `make check` before pushing; it runs ruff, mypy and the import contracts.\n")
    (repo / ".cursor" / "rules" / "logo.mdc").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (repo / "CLAUDE.md").write_text("- " + "x" * (MAX_FILE_BYTES + 10) + "\n")
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "GEMINI.md").write_text("- The production database password is in the team vault under prod-db.\n")
    (repo / "GEMINI.md").symlink_to(outside / "GEMINI.md")
    summary, err, exc = run(repo, space="team")
    refused = {r["file"]: r["reason"] for r in summary["refused"]}
    assert "binary" in refused[".cursor/rules/logo.mdc"]
    assert "too long" in refused["CLAUDE.md"]
    assert "outside the folder given" in refused["GEMINI.md"]
    assert exc is not None and exc.returncode == 1
    assert summary["proposals"] == 1
    assert not Proposal.objects.filter(body__contains="password").exists()


def test_without_approve_nothing_is_approved_and_with_it_the_reviewer_decides(db, reviewer, samples):
    run(samples / "shop" / "AGENTS.md", space="team")
    assert Record.objects.count() == 0
    summary, _err, exc = run(samples / "shop" / "GEMINI.md", space="team", approve=True, reviewer="rita")
    assert exc is None
    assert summary["approved"] == 3 == Record.objects.count()
    assert all(r.status == "approved" for r in Record.objects.all())
    assert Proposal.objects.filter(state=ProposalState.PENDING).count() == summary_pending(samples)


def summary_pending(samples: Path) -> int:
    """AGENTS.md's pieces (still pending after the first run)."""
    return 6


def test_a_second_import_of_the_same_files_proposes_nothing_new(db, reviewer, samples):
    run(samples / "shop", space="team")
    before = Proposal.objects.count()
    summary, _err, _exc = run(samples / "shop", space="team")
    assert summary["proposals"] == 0
    assert len(summary["duplicates"]) == before
    assert Proposal.objects.count() == before


def test_the_inbox_filters_by_source_file_and_shows_file_and_line_on_the_card(db, signed_in, samples):
    run(samples / "shop", space="team")
    page = signed_in.get("/", {"file": "GEMINI.md", "view": "cards"}).content.decode()
    gemini = Proposal.objects.filter(metadata__import_file="GEMINI.md")
    assert gemini.count() == 2  # the third bullet repeats CLAUDE.md's and is listed there
    for p in gemini:
        assert f'id="proposal-{p.pk}"' in page
    assert (
        f'id="proposal-{Proposal.objects.get(metadata__import_file="AGENTS.md", metadata__import_line=5).pk}"'
        not in page
    )
    assert "GEMINI.md</a> line 3" in page
    # Clearing a file's worth: "accept all that match" under the file filter names exactly its proposals.
    confirm = signed_in.get("/proposals/bulk-all", {"file": "GEMINI.md", "op": "accept"})
    assert confirm.status_code == 200
    assert sorted(confirm.context["ids"]) == sorted(p.public_id for p in gemini)
    signed_in.post("/proposals/bulk", {"ids": confirm.context["ids"], "op": "accept"})
    assert Record.objects.count() == 2
    assert Proposal.objects.filter(state=ProposalState.PENDING).count() == Proposal.objects.count() - 2


def test_the_upload_page_turns_uploaded_files_into_proposals_and_never_reads_a_server_path(db, signed_in, samples):
    shop = samples / "shop"
    uploads = [
        SimpleUploadedFile("CLAUDE.md", (shop / "CLAUDE.md").read_bytes()),
        SimpleUploadedFile("python-style.mdc", (shop / ".cursor" / "rules" / "python-style.mdc").read_bytes()),
        SimpleUploadedFile("../../etc/.windsurfrules", (shop / ".windsurfrules").read_bytes()),
        SimpleUploadedFile("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00"),
    ]
    answer = signed_in.post(
        "/import/", {"files": uploads, "space": "team", "path": str(samples / "legacy" / "GUIDE.md")}
    )
    assert answer.status_code == 200
    page = answer.content.decode()
    assert 'href="/?file=CLAUDE.md"' in page and "python-style.mdc" in page
    assert "logo.png" in page and "binary" in page
    assert Proposal.objects.filter(metadata__import_file=".windsurfrules").exists()  # its base name only
    assert not Proposal.objects.filter(body__contains="must never be imported").exists()
    assert Record.objects.count() == 0
    assert signed_in.post("/import/", {"space": "team"}).status_code == 400
    assert (
        signed_in.post("/import/", {"files": [SimpleUploadedFile("AGENTS.md", b"- x")], "space": "nope"}).status_code
        == 400
    )


def test_comments_deeper_headings_rules_and_tables_do_not_become_pieces_of_their_own(db, reviewer, samples):
    summary, _err, exc = run(samples / "payments", space="team")
    assert exc is None
    places = by_place()
    assert set(places) == {"CLAUDE.md:7", "CLAUDE.md:14", "CLAUDE.md:15", "CLAUDE.md:21", "CLAUDE.md:22"}
    assert places["CLAUDE.md:7"].title == "Build & test" and places["CLAUDE.md:7"].body.startswith("| Command |")
    assert not Proposal.objects.filter(body__contains="keep this file short").exists()
    assert not Proposal.objects.filter(body__startswith="###").exists()
    assert "Europe/Berlin" in places["CLAUDE.md:22"].body  # a nested bullet stays with its parent
    assert summary["proposals"] == 5


def test_a_file_named_on_the_command_line_is_read_even_through_a_link(db, reviewer, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "CLAUDE.md").write_text("- Answer in British English and keep commit messages under 72 characters.\n")
    home = tmp_path / "home" / ".claude"
    home.mkdir(parents=True)
    (home / "CLAUDE.md").symlink_to(dotfiles / "CLAUDE.md")
    summary, _err, exc = run(home / "CLAUDE.md", space="personal")
    assert exc is None and summary["proposals"] == 1
