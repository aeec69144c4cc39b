"""Reading notes and agent instruction files (CLAUDE.md, AGENTS.md) into items to propose."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from reviews import validation as v

from . import legacy
from .notes import (
    DEFAULT_INSTRUCTION_KIND,
    DEFAULT_NOTE_KIND,
    INSTRUCTION_FILE_RE,
    MAX_FILE_BYTES,
    RECORD_ID_RE,
    MarkdownError,
    split_front_matter,
    tag_list,
)

_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_H1_RE = re.compile(r"^#\s+(.+?)\s*#*\s*$")
_SECTION_RE = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$")
_BULLET_RE = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_INLINE_TAG_RE = re.compile(r"(?<![\w/#&\]])#([A-Za-z0-9_][\w/.:+-]*)")
_INLINE_CODE_RE = re.compile(r"`[^`\n]*`")
# Lines that are no paragraph of their own: a deeper heading, a thematic break.
_NOT_PROSE_RE = re.compile(r"^\s*(#{1,6}\s|([-*_])\s*(\2\s*){2,}$)")


@dataclass
class Item:
    """One proposal's worth of content taken from a file."""

    label: str  # file name, or "CLAUDE.md item 3" for a piece of one
    title: str
    body: str
    tags: list
    kind: str
    space: str | None
    record_id: str | None = None  # a Vetted id in the front matter (an exported file)
    piece: bool = False  # one bullet or section of an instruction file
    extra: dict = field(default_factory=dict)  # review_by, valid_from, valid_until for new notes
    line: int | None = None  # 1-based line in its file where a piece starts
    section: str | None = None  # the heading a piece sits under


def _outside_code(lines: list[str]) -> Iterable[tuple[int, str]]:
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE_RE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield index, line


def inline_tags(body: str) -> list[str]:
    """Obsidian-style ``#tags`` in the text (not in code, not headings, not all digits),
    lowercased; ones Vetted cannot store are left out."""
    found: list[str] = []
    for _, line in _outside_code(body.split("\n")):
        for match in _INLINE_TAG_RE.finditer(_INLINE_CODE_RE.sub("", line)):
            tag = match.group(1).rstrip(".:/+-").lower()
            if (
                tag
                and not tag.isdigit()
                and len(tag) <= v.TAG_MAX_LEN
                and re.match(r"^[a-z0-9][a-z0-9._/:+-]*$", tag)
                and tag not in found
            ):
                found.append(tag)
    return found


def _plain(text: str) -> str:
    """A heading or bullet as a plain one-line title: no emphasis, links or code marks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url)
    text = re.sub(r"\[\[([^\]|]*\|)?([^\]]*)\]\]", r"\2", text)  # [[wiki|text]]
    # Underscores inside a word (select_related) are the word's, not emphasis.
    text = re.sub(r"(\*\*|(?<!\w)__|__(?!\w)|\*|(?<!\w)_|_(?!\w)|`|~~)", "", text)
    text = re.sub(r"(?<![\w/#&])#[A-Za-z0-9_][\w/.:+-]*", "", text)  # inline tags
    return re.sub(r"\s+", " ", text).strip(" -:")


def title_from_text(text: str, limit: int = 80) -> str:
    """A short title for a bullet: its first sentence or clause, cut at a word."""
    first = _plain(text.strip().split("\n", 1)[0])
    sentence = re.split(r"(?<=[.!?])\s|:\s|\s[-–—]\s", first, maxsplit=1)[0].rstrip(".!?:; ")
    if len(sentence) >= v.TITLE_MIN:
        first = sentence
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return first


def _kind_of(front: dict, default: str) -> str:
    kind = front.get("kind")
    if kind:
        return str(kind)
    typ = str(front.get("type") or "").strip().lower()
    return typ if typ in v.kinds() else default


def _space_of(front: dict) -> str | None:
    space = legacy.space_of(front)  # or the old name, scope, in an older note
    return str(space).strip().lower() if space else None


def _dates_of(front: dict) -> dict:
    extra = {}
    for name in ("review_by", "valid_from", "valid_until"):
        value = front.get(name)
        if value not in (None, ""):
            extra[name] = value.date() if isinstance(value, datetime) else value
    return extra


def parse_note(label: str, stem: str, text: str, *, default_kind: str | None) -> Item:
    """An Obsidian / Basic Memory note, or a file exported by Vetted."""
    front, body = split_front_matter(text)
    given_id = str(front.get("id", "")).strip()
    record_id = given_id if RECORD_ID_RE.match(given_id) else None
    tags = tag_list(front.get("tags"))
    if record_id:
        # An exported file: the front matter is authoritative and the body is
        # taken as is (no title or tags guessed from it).
        title = str(front.get("title") or "")
        return Item(
            label=label,
            title=title,
            body=body,
            tags=tags,
            kind=_kind_of(front, default_kind or DEFAULT_NOTE_KIND),
            space=_space_of(front),
            record_id=record_id,
        )
    lines = body.split("\n")
    first = next(((i, line) for i, line in enumerate(lines) if line.strip()), None)
    title = str(front.get("title") or "").strip()
    h1 = None
    for index, line in _outside_code(lines):
        match = _H1_RE.match(line)
        if match:
            h1 = (index, match.group(1))
            break
    if not title and h1:
        title = _plain(h1[1])
    if not title:
        title = stem.replace("_", " ").strip()
    # A leading "# Title" that repeats the title is the title, not body text.
    if first and h1 and first[0] == h1[0] and _plain(h1[1]) == _plain(title):
        body = "\n".join(lines[first[0] + 1 :])
    for tag in inline_tags(body):
        if tag not in [t.lower() for t in tags]:
            tags.append(tag)
    return Item(
        label=label,
        title=title,
        body=body,
        tags=tags,
        kind=_kind_of(front, default_kind or DEFAULT_NOTE_KIND),
        space=_space_of(front),
        extra=_dates_of(front),
    )


def parse_instructions(label: str, text: str, *, default_kind: str | None) -> list[Item]:
    """A CLAUDE.md / AGENTS.md-style file: each top-level bullet becomes an item;
    a ``#``/``##`` section without bullets becomes one item titled by its heading
    (text before the first heading counts as a section titled by the file name)."""
    front, body = split_front_matter(text)
    return parse_instruction_body(
        label, body, front=front, first_line=_body_offset(text, body) + 1, default_kind=default_kind
    )


def _body_offset(text: str, body: str) -> int:
    """How many lines of ``text`` come before ``body`` (its front matter)."""
    return text.count("\n") - body.count("\n")


def parse_instruction_body(
    label: str, body: str, *, front: dict, first_line: int = 1, default_kind: str | None, paragraphs: bool = False
) -> list[Item]:
    """``parse_instructions`` on a body whose front matter was already read;
    ``first_line`` is the body's first line number in its file. ``paragraphs``:
    in a section with bullets, a paragraph outside them is a piece of its own."""
    kind = _kind_of(front, default_kind or DEFAULT_INSTRUCTION_KIND)
    space = _space_of(front)
    file_tags = tag_list(front.get("tags"))
    lines = body.split("\n")

    sections: list[tuple[str | None, list[tuple[int, str]]]] = [(None, [])]
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE_RE.match(line):
            fenced = not fenced
        match = None if fenced else _SECTION_RE.match(line)
        if match:
            sections.append((_plain(match.group(2)), []))
        else:
            sections[-1][1].append((index + first_line, line))

    items: list[Item] = []
    number = 0

    def add(title: str, text: str, section: str | None, line: int):
        nonlocal number
        number += 1
        tags = list(file_tags)
        for tag in inline_tags(text):
            if tag not in tags:
                tags.append(tag)
        items.append(
            Item(
                label=f"{label} item {number}",
                title=title,
                body=text.strip("\n"),
                tags=tags,
                kind=kind,
                space=space,
                piece=True,
                line=line,
                section=section,
            )
        )

    for heading, numbered in sections:
        section_lines = [line for _n, line in numbered]
        bullets: list[list[str]] = []
        starts: list[int] = []
        loose: list[tuple[int, list[str]]] = []
        loose_open: list[str] | None = None
        current: list[str] | None = None
        fenced = False
        for number_of_line, line in numbered:
            was_fenced = fenced
            if _FENCE_RE.match(line):
                fenced = not fenced
                if not was_fenced and not line[:1].isspace():
                    current = None  # a code block at the margin ends the bullet
                    continue
            match = None if fenced or line[:1].isspace() else _BULLET_RE.match(line)
            if match:
                current = [match.group(1)]
                bullets.append(current)
                starts.append(number_of_line)
                loose_open = None
            elif current is not None and (
                fenced
                or line[:1].isspace()
                or not line.strip()
                or (current[-1].strip() and not line.startswith(("#", ">", "|")))
            ):
                current.append(line)
            elif paragraphs and not fenced and line.strip() and not _NOT_PROSE_RE.match(line):
                current = None
                if loose_open is None:
                    loose_open = []
                    loose.append((number_of_line, loose_open))
                loose_open.append(line)
            else:
                current = None
                loose_open = None
        if bullets:
            # Paragraphs between bullets stand alone too, except a lead-in ("follow these rules:").
            for start, para in loose:
                text = "\n".join(para).strip()
                if not text.endswith(":"):
                    bullets.append([text])
                    starts.append(start)
            order = sorted(range(len(bullets)), key=starts.__getitem__)
            bullets, starts = [bullets[i] for i in order], [starts[i] for i in order]
            for bullet, start in zip(bullets, starts, strict=True):
                text = "\n".join(bullet).rstrip()
                indents = [len(ln) - len(ln.lstrip()) for ln in bullet[1:] if ln.strip()]
                if indents:  # dedent continuation lines by their common indent
                    cut = min(indents)
                    text = "\n".join([bullet[0], *(ln[cut:] if ln.strip() else "" for ln in bullet[1:])]).rstrip()
                # A table has no sentence to be titled by: its heading names it.
                title = (heading or Path(label).stem) if text.startswith("|") else title_from_text(text)
                add(title, text, heading, start)
        else:
            text = "\n".join(section_lines).strip()
            if not text:
                continue
            start = next(n for n, line in numbered if line.strip())
            add(heading or Path(label).stem, text, heading, start)
    return items


def is_instruction_file(path: Path) -> bool:
    return bool(INSTRUCTION_FILE_RE.match(path.name))


def read_text(path: Path) -> str:
    """The file as text with ``\\n`` line endings; MarkdownError if too long, not UTF-8 or empty."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise MarkdownError(f"too long ({size} bytes; at most {MAX_FILE_BYTES})")
        raw = path.read_bytes()
    except OSError as exc:
        raise MarkdownError(f"cannot be read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MarkdownError(f"not valid UTF-8 (byte {exc.start})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise MarkdownError("empty")
    return text
