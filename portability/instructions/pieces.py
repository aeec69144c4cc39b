"""An instruction file into candidates (one per bullet or section, each with
its line), and a guess at each one's kind from its words and its heading."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from portability.markdown_io.notes import split_front_matter
from portability.markdown_io.parse import Item, parse_instruction_body
from reviews import validation as v

from .files import imports_in

# Cue words, checked in this order: a preference's wording wins over an
# imperative verb ("Prefer X" is a preference even though it is an order).
_PREFERENCE = re.compile(
    r"\b(prefer|preferred|rather than|instead of|in favou?r of|over (?:ticket|the|a|an)\b|favou?r|i like|we like|"
    r"do not like|don't like|style|tone|naming)\b",
    re.IGNORECASE,
)
_PROCEDURE_START = re.compile(
    r"^(\d+[.)]\s|run|use|start|install|copy|build|deploy|regenerate|open|ask|check|create|add|always|never|"
    r"before|after|when|do not|don't|make sure|type-annotate|call|set|keep|write|follow)\b",
    re.IGNORECASE,
)
_FACT = re.compile(
    r"\b(is|are|was|lives?|live in|stored|runs on|goes through|go out|sits?|uses|wraps|built with|located|"
    r"arrive)\b",
    re.IGNORECASE,
)
_HEADING_KIND = (
    (re.compile(r"style|convention|preference|tone|taste", re.IGNORECASE), "preference"),
    (
        re.compile(r"command|setup|workflow|build|test|deploy|release|steps|how to|agreement", re.IGNORECASE),
        "procedure",
    ),
    (re.compile(r"overview|architecture|about|context|structure|stack|background|glossary", re.IGNORECASE), "fact"),
)


def detect_kind(text: str, section: str | None) -> str | None:
    """``preference``, ``procedure`` or ``fact`` when the words say so, else None."""
    first = text.strip().split("\n", 1)[0]
    found: str | None = None
    if _PREFERENCE.search(first):
        found = "preference"
    elif _PROCEDURE_START.match(first) or "```" in text:
        found = "procedure"
    if found is None and section:
        for pattern, kind in _HEADING_KIND:
            if pattern.search(section):
                found = kind
                break
    if found is None and _FACT.search(first):
        found = "fact"
    return found if found in v.kinds() else None


@dataclass
class Candidate:
    """One piece of one file, before it is proposed."""

    item: Item
    file: str
    line: int
    tool: str
    applies_to: list[str] = field(default_factory=list)  # Cursor globs
    also: list[str] = field(default_factory=list)  # "AGENTS.md:9" where the same text repeats

    @property
    def place(self) -> str:
        return f"{self.file}:{self.line}"


_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
_ABOUT_THE_FILE = re.compile(r"^\s*this (file|document|guide)\b", re.IGNORECASE)


def _lenient_front_matter(text: str) -> tuple[dict, str]:
    """Cursor writes ``globs: **/*.py`` unquoted, which YAML reads as an
    alias and refuses; such a block is read as plain ``key: value`` lines."""
    try:
        return split_front_matter(text)
    except Exception:  # noqa: BLE001 - any YAML failure falls back to plain lines
        pass
    lines = text.split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if not lines or lines[0].rstrip() != "---" or end is None:
        return {}, text
    front: dict = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep and key.strip():
            front[key.strip()] = value.strip()
    return front, "\n".join(lines[end + 1 :])


def _globs(front: dict) -> list[str]:
    value = front.get("globs")
    if value in (None, ""):
        return []
    if isinstance(value, list):
        return [str(g).strip() for g in value if str(g).strip()]
    return [g.strip().strip("\"'") for g in str(value).split(",") if g.strip()]


def pieces_of(label: str, text: str, *, tool: str, default_kind: str | None) -> tuple[list[Candidate], list[str]]:
    """(candidates, pieces left out with why). A piece that only points to
    other files (an ``@path`` import) is left out: the file it names is read instead."""
    # HTML comments are notes to the file's editors, not to the agent; blanked
    # line for line so every line number stays right.
    text = _COMMENT_RE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    front, body = _lenient_front_matter(text)
    # Only Vetted's own keys pass to the parser; Cursor's (description, globs,
    # alwaysApply) are the tool's, kept as where a rule applies.
    ours = {k: front[k] for k in ("kind", "tags") if k in front}
    first_line = text.count("\n") - body.count("\n") + 1
    try:
        items = parse_instruction_body(
            label, body, front=ours, first_line=first_line, default_kind="procedure", paragraphs=True
        )
    except yaml.YAMLError:  # pragma: no cover - the front matter was read above
        items = []
    globs = _globs(front)
    candidates: list[Candidate] = []
    left_out: list[str] = []
    for item in items:
        line = item.line or 1
        if _ABOUT_THE_FILE.match(item.body):
            left_out.append(f"{label} line {line}: describes the file itself, not something to remember")
            continue
        if imports_in(item.body):
            left_out.append(f"{label} line {line}: points to other files (those are read as imports)")
            continue
        if default_kind:
            item.kind = default_kind
        elif "kind" not in ours:
            item.kind = detect_kind(item.body, item.section) or "procedure"
        candidates.append(Candidate(item=item, file=label, line=line, tool=tool, applies_to=globs))
    return candidates, left_out
