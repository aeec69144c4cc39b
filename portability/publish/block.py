"""The managed block: its markers, its parts, and putting it back into a
file byte for byte around it."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

BEGIN = "<!-- vetted:begin -->"
END_PREFIX = "<!-- vetted:end"
END = END_PREFIX + " {digest} -->"
RECORD = "<!-- vetted:record {id} -->"
NOTE = (
    "<!-- Approved memory published by Vetted. An edit between these markers becomes a proposal in Vetted "
    "(the block is held until it is decided); text outside them is yours and never changed. -->"
)
_BEGIN_RE = re.compile(r"^<!-- vetted:begin -->[ \t]*$", re.MULTILINE)
_END_RE = re.compile(r"^<!-- vetted:end (?P<digest>[0-9a-f]{16}) -->[ \t]*$", re.MULTILINE)
_RECORD_RE = re.compile(r"^<!-- vetted:record (?P<id>rec_[0-9a-z]+) -->[ \t]*$", re.MULTILINE)


class BlockError(Exception):
    """The file's markers cannot be trusted (say why); the file is left alone."""


def digest(inner: str) -> str:
    return hashlib.sha256(inner.encode("utf-8")).hexdigest()[:16]


@dataclass
class Block:
    start: int  # offset of the begin marker
    end: int  # offset just after the end marker's line
    inner: str  # between the markers
    recorded: str  # the digest the end marker carries (of the inner text as written)

    @property
    def edited(self) -> bool:
        return digest(self.inner) != self.recorded


@dataclass
class Parts:
    loose: str  # text inside the block outside any record's section (besides the note)
    sections: dict[str, str] = field(default_factory=dict)  # record id -> its text


def find(text: str) -> Block | None:
    begins = list(_BEGIN_RE.finditer(text))
    ends = list(_END_RE.finditer(text))
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].end():
        raise BlockError(
            f"{len(begins)} begin and {len(ends)} end marker(s) of Vetted's block, or in the wrong order; "
            "put back exactly one pair (or remove both) and publish again"
        )
    start, stop = begins[0].start(), ends[0].end()
    if stop < len(text) and text[stop] == "\n":
        stop += 1
    inner = text[begins[0].end() + 1 : ends[0].start()] if begins[0].end() < ends[0].start() else ""
    return Block(start=start, end=stop, inner=inner, recorded=ends[0].group("digest"))


def render_inner(sections: list[tuple[str, str]], footer: str = "") -> str:
    """The text between the markers: the note, each record's section, an optional footer line."""
    out = [NOTE, ""]
    for record_id, text in sections:
        out += [RECORD.format(id=record_id), text.rstrip("\n"), ""]
    if footer:
        out += [footer, ""]
    return "\n".join(out)


def render_block(inner: str) -> str:
    return f"{BEGIN}\n{inner}{END.format(digest=digest(inner))}\n"


def parts(inner: str) -> Parts:
    matches = list(_RECORD_RE.finditer(inner))
    head = inner[: matches[0].start()] if matches else inner
    loose = head.replace(NOTE, "").strip()
    result = Parts(loose=loose)
    for index, match in enumerate(matches):
        stop = matches[index + 1].start() if index + 1 < len(matches) else len(inner)
        result.sections[match.group("id")] = inner[match.end() : stop].strip("\n")
    return result


def replace(text: str, block: Block | None, new_block: str) -> str:
    """``text`` with the block replaced (or appended after a blank line); every other byte kept."""
    if block is not None:
        return text[: block.start] + new_block + text[block.end :]
    if not text:
        return new_block
    sep = "" if text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return text + sep + new_block
