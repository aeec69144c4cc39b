"""Markdown portability: export approved records as a folder of Markdown
notes (Obsidian-readable, git-diffable) and import folders of notes and
agent instruction files (CLAUDE.md, AGENTS.md) as proposals.

File format (one record per file)::

    ---
    id: rec_1a2b3c4d5e6f
    title: Billing API repository
    kind: fact
    scope: team
    status: approved
    tags:
    - billing
    review_by: 2027-05-30
    ...
    ---

    <the body, exactly as approved>

File names are ``<slug>--<record id>.md``: the slug (ASCII, lowercase, at most
60 characters) keeps them readable, the id makes them unique and stable (a
record's title and id never change; a revision is a new record with a new
id, hence a new file). Output is deterministic: fixed key order, no export
time inside the notes (it lives in ``.vetted-export.json``).

Nothing here changes the database except through ``reviews.actions``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml
from django.db import transaction
from django.utils import timezone

from . import actions
from . import validation as v
from .checksum import content_checksum
from .errors import DuplicateContent, ValidationFailed, VettedError
from .models import Agent, Proposal, Record, RecordStatus

MANIFEST_NAME = ".vetted-export.json"
HISTORY_DIR = "history"
FORMAT_NAME = "vetted-markdown"
FORMAT_VERSION = 1
SLUG_MAX = 60
MAX_FILE_BYTES = 1_000_000
RECORD_ID_RE = re.compile(r"^rec_[0-9a-f]{12}$")
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
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=1_000_000)


def split_front_matter(text: str) -> tuple[dict, str]:
    """(front matter, body). A file without a closed ``---`` block at its very
    start has no front matter. Raises MarkdownError for YAML that is not a mapping."""
    if not (text.startswith("---\n") or text == "---"):
        return {}, text
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            raw = "\n".join(lines[1:index])
            body = "\n".join(lines[index + 1:])
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
        slug = cut.rsplit("-", 1)[0] if "-" in cut[SLUG_MAX // 2:] else cut
        slug = slug.strip("-")
    return slug or "record"


def file_name(record: Record) -> str:
    return f"{slugify(record.title)}--{record.public_id}.md"


# --------------------------------------------------------------------------- export


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _same_scope_id(link: Record | None, scope: str) -> str | None:
    # A link to a record in another space (a moved record) would name it in
    # this export: leave it out.
    return link.public_id if link is not None and link.scope == scope else None


def record_front_matter(record: Record) -> dict:
    front = {
        "id": record.public_id,
        "title": record.title,
        "kind": record.kind,
        "scope": record.scope,
        "status": record.status,
        "tags": sorted(record.tags),
        "review_by": record.review_by,
        "approved_at": _iso(record.approved_at),
        "approved_by": record.approved_by.get_username(),
        "verified_at": _iso(record.verified_at),
    }
    if record.valid_from:
        front["valid_from"] = record.valid_from
    if record.valid_until:
        front["valid_until"] = record.valid_until
    front["checksum"] = record.approved_checksum
    front["supersedes"] = _same_scope_id(record.supersedes, record.scope)
    front["superseded_by"] = _same_scope_id(record.superseded_by, record.scope)
    front["provenance"] = {
        "proposed_by": record.proposed_by.name if record.proposed_by_id else None,
        "source_tool": record.source_tool or None,
        "reason": record.reason or None,
    }
    return front


def render_record(record: Record) -> str:
    return render_note(record_front_matter(record), record.body)


@dataclass
class ExportResult:
    scope: str
    written: list[str] = field(default_factory=list)     # new or changed files
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)    # records not exported, with why
    records: int = 0
    history: int = 0

    def summary(self) -> dict:
        return {"scope": self.scope, "records": self.records, "history": self.history,
                "written": len(self.written), "unchanged": len(self.unchanged), "removed": self.removed,
                "skipped": self.skipped}


def _iter_markdown(root: Path) -> Iterable[Path]:
    """Markdown files under ``root``, sorted, skipping hidden files and folders
    (.git, .obsidian, .trash)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and Path(name).suffix.lower() in MARKDOWN_SUFFIXES:
                yield Path(dirpath) / name


def _read_front(path: Path) -> dict | None:
    """Front matter of an existing file, or None if it cannot be read."""
    try:
        raw = path.read_bytes()
        if len(raw) > MAX_FILE_BYTES:
            return None
        front, _ = split_front_matter(raw.decode("utf-8-sig").replace("\r\n", "\n"))
        return front
    except (OSError, UnicodeDecodeError, MarkdownError):
        return None


def _unimported_edit(path: Path) -> bool:
    """True if an exported file's text no longer matches the checksum in its
    own front matter and that text is not in Vetted either (as a proposal in
    any state or a record): someone edited it and has not imported it yet."""
    try:
        front, body = split_front_matter(path.read_bytes().decode("utf-8-sig").replace("\r\n", "\n"))
        checksum = content_checksum(kind=str(front["kind"]), scope=str(front["scope"]),
                                    title=v.clean_title(str(front["title"])), body=v.clean_body(body),
                                    tags=v.clean_tags(_tag_list(front.get("tags"))))
    except (OSError, UnicodeDecodeError, MarkdownError, KeyError, ValidationFailed, TypeError):
        return True
    if checksum == front.get("checksum"):
        return False
    return not (Proposal.objects.filter(content_checksum=checksum).exists()
                or Record.objects.filter(approved_checksum=checksum).exists())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".vetted-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; notes get the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def export_markdown(directory: Path | str, *, scope: str, include_history: bool = False, force: bool = False,
                    on_record: Callable[[], None] | None = None) -> ExportResult:
    """Write the approved records of ``scope`` (and with ``include_history``
    their superseded, retired and disputed versions, under ``history/``) to
    ``directory``; remove files this export wrote before whose records no
    longer qualify. Refuses a folder holding another scope's files, and
    (unless ``force``) one whose exported files were edited since export.
    Reads the database only."""
    scope = v.clean_scope(scope)
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise MarkdownError(f"{root} exists and is not a folder.")
    root.mkdir(parents=True, exist_ok=True)

    manifest_path = root / MANIFEST_NAME
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text("utf-8"))
        except (OSError, ValueError):
            raise MarkdownError(f"{manifest_path} is not a Vetted export manifest; use another folder.") from None
        if not isinstance(manifest, dict) or manifest.get("scope") != scope:
            other = manifest.get("scope") if isinstance(manifest, dict) else "?"
            raise MarkdownError(f"Refusing to export {scope} records into {root}: it holds a {other} export "
                                f"({MANIFEST_NAME}). Use another folder.")

    existing: dict[str, dict] = {}  # relative path -> front matter, for files carrying a Vetted id
    foreign: list[str] = []
    for path in _iter_markdown(root):
        front = _read_front(path)
        if not front:
            continue
        rel = path.relative_to(root).as_posix()
        file_scope = str(front.get("scope", "")).strip().lower()
        if file_scope and file_scope != scope and (file_scope in ("personal", "team", "system") or "id" in front):
            foreign.append(f"{rel} ({file_scope})")
        elif RECORD_ID_RE.match(str(front.get("id", ""))):
            existing[rel] = front
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise MarkdownError(f"Refusing to export {scope} records into {root}: it holds files of another scope: "
                            f"{shown}. Use another folder.")

    result = ExportResult(scope=scope)
    statuses = [RecordStatus.APPROVED, *(HISTORY_STATUSES if include_history else ())]
    records = (Record.objects.filter(scope=scope, status__in=statuses)
               .select_related("approved_by", "proposed_by", "supersedes", "superseded_by")
               .order_by("public_id"))
    planned: dict[str, bytes] = {}
    for record in records:
        if record.scope != scope:  # belt and braces: the query already says so
            raise AssertionError(f"{record.public_id} is not in {scope}")
        if record.current_checksum() != record.approved_checksum:
            result.skipped.append({"id": record.public_id, "reason": "edited since approval"})
            continue
        folder = "" if record.status == RecordStatus.APPROVED else f"{HISTORY_DIR}/"
        planned[folder + file_name(record)] = render_record(record).encode("utf-8")
        if folder:
            result.history += 1
        else:
            result.records += 1
        if on_record:
            on_record()

    # Files this exporter manages: the top level and history/. Vetted files
    # the user moved elsewhere are left alone.
    managed = {rel for rel in existing
               if "/" not in rel or (rel.startswith(f"{HISTORY_DIR}/") and rel.count("/") == 1)}
    to_remove = sorted(managed - set(planned))
    to_overwrite = [rel for rel, data in planned.items() if rel in managed and (root / rel).read_bytes() != data]
    if not force:
        edited = [rel for rel in sorted({*to_remove, *to_overwrite}) if _unimported_edit(root / rel)]
        if edited:
            shown = ", ".join(edited[:5]) + (f" and {len(edited) - 5} more" if len(edited) > 5 else "")
            raise MarkdownError(f"{len(edited)} exported file(s) were edited since the last export, the edits are not "
                                f"in Vetted yet, and they would be overwritten or removed: {shown}. Import them first (import_markdown), or pass "
                                "--force to discard the edits.")

    for rel in sorted(planned):
        path = root / rel
        if path.exists() and path.read_bytes() == planned[rel]:
            result.unchanged.append(rel)
            continue
        _write_atomic(path, planned[rel])
        result.written.append(rel)
    for rel in to_remove:
        (root / rel).unlink(missing_ok=True)
        result.removed.append(rel)
    history = root / HISTORY_DIR
    if history.is_dir() and not any(history.iterdir()):
        history.rmdir()

    manifest = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "scope": scope,
        "include_history": include_history,
        "records": result.records,
        "history": result.history,
        "exported_at": _iso(timezone.now()),
    }
    _write_atomic(manifest_path, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    return result


# --------------------------------------------------------------------------- parsing notes


_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_H1_RE = re.compile(r"^#\s+(.+?)\s*#*\s*$")
_SECTION_RE = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$")
_BULLET_RE = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_INLINE_TAG_RE = re.compile(r"(?<![\w/#&\]])#([A-Za-z0-9_][\w/.:+-]*)")
_INLINE_CODE_RE = re.compile(r"`[^`\n]*`")


@dataclass
class Item:
    """One proposal's worth of content taken from a file."""

    label: str                # file name, or "CLAUDE.md item 3" for a piece of one
    title: str
    body: str
    tags: list
    kind: str
    scope: str | None
    record_id: str | None = None   # a Vetted id in the front matter (an exported file)
    piece: bool = False            # one bullet or section of an instruction file
    extra: dict = field(default_factory=dict)  # review_by, valid_from, valid_until for new notes


def _tag_list(value) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [part for part in re.split(r"[,\s]+", value) if part]
    if isinstance(value, (list, tuple)):
        return [str(part) for part in value if part is not None and str(part).strip()]
    return [str(value)]


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
            if tag and not tag.isdigit() and len(tag) <= v.TAG_MAX_LEN and re.match(r"^[a-z0-9][a-z0-9._/:+-]*$", tag) \
                    and tag not in found:
                found.append(tag)
    return found


def _plain(text: str) -> str:
    """A heading or bullet as a plain one-line title: no emphasis, links or code marks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)          # [text](url)
    text = re.sub(r"\[\[([^\]|]*\|)?([^\]]*)\]\]", r"\2", text)     # [[wiki|text]]
    text = re.sub(r"(\*\*|__|\*|_|`|~~)", "", text)
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


def _scope_of(front: dict) -> str | None:
    scope = front.get("scope")
    return str(scope).strip().lower() if scope else None


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
    record_id = str(front.get("id", "")).strip()
    record_id = record_id if RECORD_ID_RE.match(record_id) else None
    tags = _tag_list(front.get("tags"))
    if record_id:
        # An exported file: the front matter is authoritative and the body is
        # taken as is (no title or tags guessed from it).
        title = str(front.get("title") or "")
        return Item(label=label, title=title, body=body, tags=tags, kind=_kind_of(front, default_kind or DEFAULT_NOTE_KIND),
                    scope=_scope_of(front), record_id=record_id)
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
        body = "\n".join(lines[first[0] + 1:])
    for tag in inline_tags(body):
        if tag not in [t.lower() for t in tags]:
            tags.append(tag)
    return Item(label=label, title=title, body=body, tags=tags, kind=_kind_of(front, default_kind or DEFAULT_NOTE_KIND),
                scope=_scope_of(front), extra=_dates_of(front))


def parse_instructions(label: str, text: str, *, default_kind: str | None) -> list[Item]:
    """A CLAUDE.md / AGENTS.md-style file: each top-level bullet becomes an item;
    a ``#``/``##`` section without bullets becomes one item titled by its heading
    (text before the first heading counts as a section titled by the file name)."""
    front, body = split_front_matter(text)
    kind = _kind_of(front, default_kind or DEFAULT_INSTRUCTION_KIND)
    scope = _scope_of(front)
    file_tags = _tag_list(front.get("tags"))
    lines = body.split("\n")

    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in lines:
        if _FENCE_RE.match(line):
            fenced = not fenced
        match = None if fenced else _SECTION_RE.match(line)
        if match:
            sections.append((_plain(match.group(2)), []))
        else:
            sections[-1][1].append(line)

    items: list[Item] = []
    number = 0

    def add(title: str, text: str, section: str | None):
        nonlocal number
        number += 1
        tags = list(file_tags)
        for tag in inline_tags(text):
            if tag not in tags:
                tags.append(tag)
        items.append(Item(label=f"{label} item {number}", title=title, body=text.strip("\n"), tags=tags,
                          kind=kind, scope=scope, piece=True))

    for heading, section_lines in sections:
        bullets: list[list[str]] = []
        current: list[str] | None = None
        fenced = False
        for line in section_lines:
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
            elif current is not None and (fenced or line[:1].isspace() or not line.strip()
                                          or (current[-1].strip() and not line.startswith(("#", ">", "|")))):
                current.append(line)
            else:
                current = None
        if bullets:
            for bullet in bullets:
                text = "\n".join(bullet).rstrip()
                indents = [len(ln) - len(ln.lstrip()) for ln in bullet[1:] if ln.strip()]
                if indents:  # dedent continuation lines by their common indent
                    cut = min(indents)
                    text = "\n".join([bullet[0], *(ln[cut:] if ln.strip() else "" for ln in bullet[1:])]).rstrip()
                add(title_from_text(text), text, heading)
        else:
            text = "\n".join(section_lines).strip()
            if not text:
                continue
            if heading is None:
                heading = Path(label).stem
            add(heading, text, heading)
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


# --------------------------------------------------------------------------- import


@dataclass
class ImportOutcome:
    new: list[str] = field(default_factory=list)          # create proposals (or records with a reviewer)
    revisions: list[str] = field(default_factory=list)    # revise proposals (or new versions)
    unchanged: list[str] = field(default_factory=list)    # file labels
    duplicates: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    approved: bool = False

    def summary(self) -> dict:
        return {"new": len(self.new), "revisions": len(self.revisions), "approved": self.approved,
                "unchanged": len(self.unchanged), "duplicates": self.duplicates, "skipped": self.skipped,
                "errors": self.errors, "ids": [*self.new, *self.revisions]}

    def human(self) -> str:
        where = "approved" if self.approved else "waiting for review"
        return (f"{len(self.new)} new and {len(self.revisions)} revision(s) {where}; {len(self.unchanged)} unchanged; "
                f"{len(self.duplicates)} duplicate(s); {len(self.skipped)} skipped; {len(self.errors)} error(s).")


class StrictImportFailed(VettedError):
    code = "import_failed"

    def __init__(self, outcome: ImportOutcome):
        super().__init__(f"{len(outcome.errors)} file(s) had errors; nothing was imported (--strict).",
                         errors=outcome.errors)
        self.outcome = outcome


class _Rollback(Exception):
    pass


def collect_files(source: Path | str) -> tuple[Path, list[Path]]:
    """(base folder, markdown files) for a folder or a single file."""
    source = Path(source)
    if source.is_file():
        return source.parent, [source]
    if not source.is_dir():
        raise MarkdownError(f"{source} is not a file or folder.")
    return source, list(_iter_markdown(source))


def manifest_scope(base: Path) -> str | None:
    try:
        data = json.loads((base / MANIFEST_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    scope = data.get("scope") if isinstance(data, dict) else None
    return scope if scope in ("personal", "team", "system") else None


def import_markdown(source: Path | str, *, scope: str | None = None, kind: str | None = None, reviewer=None,
                    strict: bool = False, on_file: Callable[[], None] | None = None) -> ImportOutcome:
    """Import a folder (or one file) of Markdown as proposals from the ``import``
    agent; with ``reviewer``, each is accepted by that person at once.

    - Notes without a Vetted id and pieces of instruction files become create proposals.
    - Files with the id of a record (an export): unchanged ones are skipped
      without writing anything; edited ones become a revise proposal of that
      record, or of its current successor if it was superseded since (the
      reason says so); retired records and records of another scope are
      reported as skipped.
    - The scope is ``scope``, else the file's own, else the export manifest's,
      else ``personal``; a file whose front matter names another scope than
      ``scope`` is an error (moving between spaces is `review move`).
    - Duplicates are reported, not errors. Bad files are reported by name and
      the rest imported, unless ``strict``: then any error imports nothing.
    """
    base, files = collect_files(source)
    if scope is not None:
        scope = v.clean_scope(scope)
    if kind is not None:
        kind = v.clean_kind(kind)
    if reviewer is not None:
        actions._require_reviewer(reviewer)
    default_scope = scope or manifest_scope(base) or "personal"
    outcome = ImportOutcome(approved=reviewer is not None)
    agent_box: list[Agent] = []

    def agent() -> Agent:
        # Created on first use only: a no-op import writes nothing at all.
        if not agent_box:
            agent_box.append(actions.import_agent())
        return agent_box[0]

    def run():
        for path in files:
            label = path.relative_to(base).as_posix()
            try:
                text = read_text(path)
                if is_instruction_file(path):
                    items = parse_instructions(label, text, default_kind=kind)
                    if not items:
                        raise MarkdownError("no bullets or sections with text")
                else:
                    items = [parse_note(label, path.stem, text, default_kind=kind)]
            except MarkdownError as exc:
                outcome.errors.append({"file": label, "error": str(exc)})
                items = []
            for item in items:
                try:
                    with transaction.atomic():  # a savepoint: a bad item leaves no trace
                        _import_item(item, outcome, scope=scope, default_scope=default_scope,
                                     agent=agent, reviewer=reviewer)
                    continue
                except DuplicateContent as exc:
                    outcome.duplicates.append({"file": item.label, "existing_id": exc.existing_id})
                except TooShort as exc:
                    outcome.skipped.append({"file": item.label, "reason": str(exc)})
                except MarkdownError as exc:
                    outcome.errors.append({"file": item.label, "error": str(exc)})
                except VettedError as exc:
                    outcome.errors.append({"file": item.label, "error": exc.message})
                if agent_box and not Agent.objects.filter(pk=agent_box[0].pk).exists():
                    agent_box.clear()  # its creation was rolled back with the item
            if on_file:
                on_file()
        if strict and outcome.errors:
            raise _Rollback

    if strict:
        try:
            with transaction.atomic():
                run()
        except _Rollback:
            raise StrictImportFailed(outcome) from None
    else:
        run()
    return outcome


def _import_item(item: Item, outcome: ImportOutcome, *, scope: str | None, default_scope: str, agent, reviewer):
    item_scope = item.scope or default_scope
    if item.scope and scope and item.scope != scope:
        raise MarkdownError(f"its front matter says scope {item.scope!r}, not {scope!r}; "
                            "moving records between spaces is `review move`")
    if item.record_id:
        record = Record.objects.filter(public_id=item.record_id).select_related("superseded_by").first()
        if record is not None:
            return _reimport(item, record, outcome, scope=item_scope, agent=agent, reviewer=reviewer)
        # An id this server does not know (another server's export): a new note.
    if item.piece and len(item.body.strip()) < v.BODY_MIN:
        raise TooShort(f"too short to stand alone ({len(item.body.strip())} characters; at least {v.BODY_MIN})")
    fields = {"kind": item.kind, "scope": item_scope, "title": item.title, "body": item.body, "tags": item.tags}
    for name, value in item.extra.items():
        fields[name] = value
    proposal = actions.propose_create(agent=agent(), reason=f"Imported from Markdown: {item.label}"[:v.REASON_MAX],
                                      source_tool="import", full_duplicate_check=True, **fields)
    outcome.new.append(_maybe_accept(proposal, reviewer))


def _maybe_accept(proposal, reviewer) -> str:
    if reviewer is None:
        return proposal.public_id
    return actions.accept_proposal(proposal, actor=reviewer, note="Approved at import").result_record.public_id


def _reimport(item: Item, record: Record, outcome: ImportOutcome, *, scope: str, agent, reviewer):
    if record.scope != scope:
        raise MarkdownError(f"{record.public_id} is not a {scope} record; skipped")
    # The text as written first: an old version approved under looser rules
    # is still "unchanged" even if it would not pass today's write rules.
    as_written = content_checksum(kind=str(item.kind), scope=scope, title=str(item.title).strip(),
                                  body=item.body.strip(), tags=[str(t) for t in item.tags])
    if as_written == record.approved_checksum:
        outcome.unchanged.append(item.label)
        return
    content = v.clean_content({"kind": item.kind, "scope": scope, "title": item.title, "body": item.body,
                               "tags": item.tags})
    checksum = content_checksum(**{k: content[k] for k in ("kind", "scope", "title", "body", "tags")})
    if checksum == record.approved_checksum:
        outcome.unchanged.append(item.label)  # the text of that version: nothing to do
        return
    current = record
    seen = 0
    while current.status == RecordStatus.SUPERSEDED and current.superseded_by_id and seen < 1000:
        current = Record.objects.select_related("superseded_by").get(pk=current.superseded_by_id)
        seen += 1
    if current.scope != scope or current.status not in (RecordStatus.APPROVED, RecordStatus.DISPUTED):
        why = "retired" if current.status == RecordStatus.RETIRED else "no longer current in this scope"
        outcome.skipped.append({"file": item.label, "reason": f"edited, but {record.public_id} is {why}"})
        return
    if checksum == current.approved_checksum:
        outcome.unchanged.append(item.label)  # the edit is what was approved since
        return
    reason = f"Edited outside Vetted in {item.label}"
    if current is not record:
        reason += (f", starting from {record.public_id}, which has since been superseded by "
                   f"{current.public_id}: compare with the current text")
    changes = {name: content[name] for name in ("kind", "title", "body", "tags")}
    proposal = actions.propose_revision(current, agent=agent(), reason=reason[:v.REASON_MAX],
                                        source_tool="import", full_duplicate_check=True, **changes)
    outcome.revisions.append(_maybe_accept(proposal, reviewer))
