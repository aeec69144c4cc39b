"""The note format: names, limits, errors, YAML front matter and file names."""

from __future__ import annotations

import re
import unicodedata

import yaml

from reviews import ids
from reviews.models import Record, RecordStatus

MANIFEST_NAME = ".vetted-export.json"
HISTORY_DIR = "history"
FORMAT_NAME = "vetted-markdown"
FORMAT_VERSION = 1
SLUG_MAX = 60
MAX_FILE_BYTES = 1_000_000
RECORD_ID_RE = ids.RECORD_ID_RE
INSTRUCTION_FILE_RE = re.compile(r"^(claude|claude\.local|agents?|gemini|copilot-instructions)\.md$", re.IGNORECASE)
MARKDOWN_SUFFIXES = {".md", ".markdown"}
HISTORY_STATUSES = (RecordStatus.SUPERSEDED, RecordStatus.RETIRED, RecordStatus.DISPUTED)
DEFAULT_NOTE_KIND = "fact"
DEFAULT_INSTRUCTION_KIND = "procedure"


class MarkdownError(Exception):
    """A problem with one file (or the export folder), said for a person."""


class TooShort(MarkdownError):
    """A piece of an instruction file too short to stand alone (reported as skipped)."""


# --------------------------------------------------------------------------- front matter


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings as literal blocks (readable diffs)."""


def _str_representer(dumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_front_matter(data: dict) -> str:
    """YAML for ``data`` in its insertion order (the order is part of the format)."""
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000
    )


def split_front_matter(text: str) -> tuple[dict, str]:
    """(front matter, body). A file without a closed ``---`` block at its very
    start has no front matter. Raises MarkdownError for YAML that is not a mapping."""
    if not (text.startswith("---\n") or text == "---"):
        return {}, text
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            raw = "\n".join(lines[1:index])
            body = "\n".join(lines[index + 1 :])
            try:
                data = yaml.safe_load(raw) if raw.strip() else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" (line {mark.line + 2})" if mark is not None else ""
                raise MarkdownError(f"front matter is not valid YAML{where}") from None
            if data is None:
                data = {}
            if not isinstance(data, dict):
                raise MarkdownError("front matter must be a YAML mapping (key: value lines)")
            return data, body
    return {}, text  # never closed: a thematic break, not front matter


def render_note(front: dict, body: str) -> str:
    return f"---\n{dump_front_matter(front)}---\n\n{body.rstrip()}\n"


# --------------------------------------------------------------------------- names


def slugify(title: str) -> str:
    """ASCII, lowercase, hyphen-separated, at most SLUG_MAX characters, cut at a
    hyphen when possible; ``record`` when nothing of the title survives."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    if len(slug) > SLUG_MAX:
        cut = slug[:SLUG_MAX]
        slug = cut.rsplit("-", 1)[0] if "-" in cut[SLUG_MAX // 2 :] else cut
        slug = slug.strip("-")
    return slug or "record"


def file_name(record: Record) -> str:
    return f"{slugify(record.title)}--{record.public_id}.md"


def tag_list(value) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [part for part in re.split(r"[,\s]+", value) if part]
    if isinstance(value, (list, tuple)):
        return [str(part) for part in value if part is not None and str(part).strip()]
    return [str(value)]
