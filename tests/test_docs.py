"""The documentation: a short README, a site that builds in strict mode, and
reference pages that say what the code says."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_site.docs_reference import REGENERATE, stale_pages
from memory_site.docs_reference import config as config_reference

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = Path(sys.executable).with_name("mkdocs")


def _env() -> dict[str, str]:
    """This checkout's code first on the path (the venv may point at another checkout)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def _user_text() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_readme_fits_in_15_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= 15 * 1024, f"README.md is {size} bytes; move detail into a page under docs/"


def test_the_readme_keeps_the_two_commands_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make run" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_user_text_carries_no_issue_numbers_or_branch_markers():
    """Readers do not know the project's issue tracker or its branches."""
    # A marker comment around a generated table is allowed; any other comment is a stray marker.
    pattern = re.compile(r"\bissues? \d+|<!--(?![^>]*\b(?:generated|end of the)\b)|\bsession \d+\b", re.IGNORECASE)
    found = []
    for path in _user_text():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


def test_every_page_in_docs_is_in_the_navigation_or_named_for_later():
    """A page nobody can reach from the menu is as good as missing (strict mode only logs it)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert [page for page in pages if page not in nav] == []


def test_a_settings_reader_gives_the_variable_its_default_and_bounds():
    tree = ast.parse(
        'A = env_int("VETTED_X", 256 * 1024, minimum=1, maximum=9)\nB = env_choice("VETTED_Y", "a", ["a", "b"])'
    )
    assert config_reference._reads(tree) == [
        ("VETTED_X", "env_int", "`262144`", "integer `1`–`9`"),
        ("VETTED_Y", "env_choice", "`a`", "`a`, `b`"),
    ]


def test_a_variable_named_through_a_module_constant_counts():
    tree = ast.parse('_NAME = "VETTED_A" if flag else "VETTED_B"\nA = env_list(_NAME, ["team", "system"])')
    assert config_reference._reads(tree) == [("VETTED_A", "env_list", "`team,system`", "comma-separated")]


def test_a_bridge_variable_read_from_the_environment_counts():
    tree = ast.parse(
        'x = env.get("VETTED_URL") or y\nz = os.environ.get("VETTED_TEST_ENGINE", "sqlite")\nw = env["VETTED_T"]'
    )
    assert [(name, default) for name, _, default, _ in config_reference._reads(tree)] == [
        ("VETTED_URL", ""),
        ("VETTED_TEST_ENGINE", "`sqlite`"),
        ("VETTED_T", ""),
    ]


def test_a_variable_without_a_meaning_and_a_meaning_without_a_variable_are_both_named():
    found = config_reference.variables()
    names = {v.name for v in found}
    assert "VETTED_HOME" in names and "VETTED_TOKEN" in names and "VETTED_NOTIFY_EMAIL" in names
    assert config_reference.problems(found) == []
    extra = [*found, config_reference.Variable("VETTED_NEW_THING", "Notifications")]
    missing_one = [v for v in found if v.name != "VETTED_DEBUG"]
    assert config_reference.problems(extra) == [
        "VETTED_NEW_THING is read by the code but has no meaning in config_notes.MEANINGS"
    ]
    assert config_reference.problems(missing_one) == [
        "VETTED_DEBUG has a meaning in config_notes.MEANINGS but no code reads it"
    ]


def test_a_page_that_differs_from_the_code_is_stale(tmp_path):
    (tmp_path / "same.md").write_text("# Same\n", encoding="utf-8")
    (tmp_path / "changed.md").write_text("# Old\n", encoding="utf-8")
    pages = {"same.md": "# Same\n", "changed.md": "# New\n", "new.md": "# New page\n"}
    assert stale_pages(pages, tmp_path) == ["changed.md", "new.md"]


@pytest.mark.slow
def test_the_reference_pages_match_the_code():
    """Runs the generator as its own process (it sets up Django in a clean
    environment), so a setting, a command option or a tool changed without
    regenerating docs/reference/ fails here, saying how to fix it."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_site.docs_reference", "--check"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stderr}\nRun `{REGENERATE}` and commit docs/reference/."


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path):
    """Starts MkDocs: a broken link, a missing page or a bad anchor fails the build."""
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "mcp-tools.html").is_file()
