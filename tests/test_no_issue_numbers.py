"""Code says why, not when: no comment or string in our packages names a
tracker issue ("issue 16", "(issue 15 §3)"). Such a tag means nothing to the
next reader and goes stale; what it stood for is written out instead.
Migrations are checked in their comments only (their strings are data)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "dbengine",
    "common",
    "memory_site",
    "reviews",
    "inbox",
    "portability",
    "retrieval",
    "mcp_bridge",
    "notify",
    "devtools",
)
ISSUE = re.compile(r"\bissue\s*#?\d+", re.IGNORECASE)


def issue_tags(source: str, *, strings: bool) -> list[tuple[int, str]]:
    """(line, text) of each comment (and string, if ``strings``) naming an issue."""
    kinds = {tokenize.COMMENT, tokenize.STRING} if strings else {tokenize.COMMENT}
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in kinds and ISSUE.search(token.string):
            found.append((token.start[0], token.string.strip()[:80]))
    return found


def test_the_check_finds_a_tag_in_a_comment_and_in_a_string():
    source = '"""Spaces (issue 16)."""\nx = 1  # see Issue 15 §3\ny = "a tissue 3 is not one"\n'
    assert [line for line, _ in issue_tags(source, strings=True)] == [1, 2]
    assert [line for line, _ in issue_tags(source, strings=False)] == [2]


def test_no_comment_or_string_names_an_issue():
    tagged = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            in_migration = "migrations" in path.parts
            for line, text in issue_tags(path.read_text(encoding="utf-8"), strings=not in_migration):
                tagged.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert not tagged, "say what the tag stood for instead:\n" + "\n".join(tagged)
