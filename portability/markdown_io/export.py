"""export_markdown: the approved records of one space as a folder of notes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.utils import timezone

from common.files import write_atomic
from reviews import validation as v
from reviews.checksum import content_checksum
from reviews.errors import ValidationFailed
from reviews.formats import iso_utc_seconds
from reviews.models import Proposal, Record, RecordStatus

from . import legacy
from .notes import (
    FORMAT_NAME,
    FORMAT_VERSION,
    HISTORY_DIR,
    HISTORY_STATUSES,
    MANIFEST_NAME,
    MARKDOWN_SUFFIXES,
    MAX_FILE_BYTES,
    RECORD_ID_RE,
    MarkdownError,
    file_name,
    render_note,
    split_front_matter,
    tag_list,
)


def _same_space_id(link: Record | None, space: str) -> str | None:
    # A link to a record in another space (a moved record) would name it in
    # this export: leave it out.
    return link.public_id if link is not None and link.space == space else None


def record_front_matter(record: Record) -> dict:
    front = {
        "id": record.public_id,
        "title": record.title,
        "kind": record.kind,
        "space": record.space,
        "status": record.status,
        "tags": sorted(record.tags),
        "review_by": record.review_by,
        "approved_at": iso_utc_seconds(record.approved_at),
        "approved_by": record.approved_by.get_username(),
        "verified_at": iso_utc_seconds(record.verified_at),
    }
    if record.valid_from:
        front["valid_from"] = record.valid_from
    if record.valid_until:
        front["valid_until"] = record.valid_until
    front["checksum"] = record.approved_checksum
    front["supersedes"] = _same_space_id(record.supersedes, record.space)
    front["superseded_by"] = _same_space_id(record.superseded_by, record.space)
    front["provenance"] = {
        "proposed_by": record.proposed_by.name if record.proposed_by is not None else None,
        "source_tool": record.source_tool or None,
        "reason": record.reason or None,
    }
    return front


def render_record(record: Record) -> str:
    return render_note(record_front_matter(record), record.body)


@dataclass
class ExportResult:
    space: str
    written: list[str] = field(default_factory=list)  # new or changed files
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # records not exported, with why
    records: int = 0
    history: int = 0

    def summary(self) -> dict:
        return {
            "space": self.space,
            "records": self.records,
            "history": self.history,
            "written": len(self.written),
            "unchanged": len(self.unchanged),
            "removed": self.removed,
            "skipped": self.skipped,
        }


def iter_markdown(root: Path) -> Iterable[Path]:
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
        checksum = content_checksum(
            kind=str(front["kind"]),
            space=str(legacy.space_of(front)),
            title=v.clean_title(str(front["title"])),
            body=v.clean_body(body),
            tags=v.clean_tags(tag_list(front.get("tags"))),
        )
    except (OSError, UnicodeDecodeError, MarkdownError, KeyError, ValidationFailed, TypeError):
        return True
    if checksum == front.get("checksum"):
        return False
    return not (
        Proposal.objects.filter(content_checksum=checksum).exists()
        or Record.objects.filter(approved_checksum=checksum).exists()
    )


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)  # notes get the usual mode


def export_markdown(
    directory: Path | str,
    *,
    space: str,
    include_history: bool = False,
    force: bool = False,
    on_record: Callable[[], None] | None = None,
) -> ExportResult:
    """Write the approved records of ``space`` (and with ``include_history``
    their superseded, retired and disputed versions, under ``history/``) to
    ``directory``; remove files this export wrote before whose records no
    longer qualify. Refuses a folder holding another space's files, and
    (unless ``force``) one whose exported files were edited since export.
    Reads the database only."""
    space = v.clean_space(space)
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
        if not isinstance(manifest, dict) or legacy.space_of(manifest) != space:
            other = legacy.space_of(manifest) if isinstance(manifest, dict) else "?"
            raise MarkdownError(
                f"Refusing to export {space} records into {root}: it holds a {other} export "
                f"({MANIFEST_NAME}). Use another folder."
            )

    existing: dict[str, dict] = {}  # relative path -> front matter, for files carrying a Vetted id
    foreign: list[str] = []
    for path in iter_markdown(root):
        front = _read_front(path)
        if not front:
            continue
        rel = path.relative_to(root).as_posix()
        file_space = str(legacy.space_of(front) or "").strip().lower()
        if file_space and file_space != space and (file_space in ("personal", "team", "system") or "id" in front):
            foreign.append(f"{rel} ({file_space})")
        elif RECORD_ID_RE.match(str(front.get("id", ""))):
            existing[rel] = front
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise MarkdownError(
            f"Refusing to export {space} records into {root}: it holds files of another space: "
            f"{shown}. Use another folder."
        )

    result = ExportResult(space=space)
    statuses = [RecordStatus.APPROVED, *(HISTORY_STATUSES if include_history else ())]
    records = (
        Record.objects.filter(space=space, status__in=statuses)
        .select_related("approved_by", "proposed_by", "supersedes", "superseded_by")
        .order_by("public_id")
    )
    planned: dict[str, bytes] = {}
    for record in records:
        if record.space != space:  # belt and braces: the query already says so
            raise AssertionError(f"{record.public_id} is not in {space}")
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
    managed = {rel for rel in existing if "/" not in rel or (rel.startswith(f"{HISTORY_DIR}/") and rel.count("/") == 1)}
    to_remove = sorted(managed - set(planned))
    to_overwrite = [rel for rel, data in planned.items() if rel in managed and (root / rel).read_bytes() != data]
    if not force:
        edited = [rel for rel in sorted({*to_remove, *to_overwrite}) if _unimported_edit(root / rel)]
        if edited:
            shown = ", ".join(edited[:5]) + (f" and {len(edited) - 5} more" if len(edited) > 5 else "")
            raise MarkdownError(
                f"{len(edited)} exported file(s) were edited since the last export, the edits are not "
                f"in Vetted yet, and they would be overwritten or removed: {shown}. Import them first "
                "(import_markdown), or pass "
                "--force to discard the edits."
            )

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
        "space": space,
        "include_history": include_history,
        "records": result.records,
        "history": result.history,
        "exported_at": iso_utc_seconds(timezone.now()),
    }
    _write_atomic(manifest_path, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    return result
