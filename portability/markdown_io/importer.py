"""import_markdown: notes and instruction files in as proposals (or, with a
reviewer, accepted at once); a re-imported export is a no-op, edits become revisions."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from reviews import actions
from reviews import validation as v
from reviews.checksum import content_checksum
from reviews.errors import DuplicateContent, VettedError
from reviews.models import Agent, Record, RecordStatus
from reviews.space_access import space_slugs

from . import legacy
from .export import iter_markdown
from .notes import MANIFEST_NAME, MarkdownError, TooShort
from .parse import Item, is_instruction_file, parse_instructions, parse_note, read_text


@dataclass
class ImportOutcome:
    new: list[str] = field(default_factory=list)  # create proposals (or records with a reviewer)
    revisions: list[str] = field(default_factory=list)  # revise proposals (or new versions)
    unchanged: list[str] = field(default_factory=list)  # file labels
    duplicates: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    approved: bool = False

    def summary(self) -> dict:
        return {
            "new": len(self.new),
            "revisions": len(self.revisions),
            "approved": self.approved,
            "unchanged": len(self.unchanged),
            "duplicates": self.duplicates,
            "skipped": self.skipped,
            "errors": self.errors,
            "ids": [*self.new, *self.revisions],
        }

    def human(self) -> str:
        where = "approved" if self.approved else "waiting for review"
        return (
            f"{len(self.new)} new and {len(self.revisions)} revision(s) {where}; {len(self.unchanged)} unchanged; "
            f"{len(self.duplicates)} duplicate(s); {len(self.skipped)} skipped; {len(self.errors)} error(s)."
        )


class StrictImportFailed(VettedError):
    code = "import_failed"

    def __init__(self, outcome: ImportOutcome):
        super().__init__(
            f"{len(outcome.errors)} file(s) had errors; nothing was imported (--strict).", errors=outcome.errors
        )
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
    return source, list(iter_markdown(source))


def manifest_space(base: Path) -> str | None:
    try:
        data = json.loads((base / MANIFEST_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    space = legacy.space_of(data)  # or the old name, scope, in an older manifest
    return space if isinstance(space, str) and space in space_slugs() else None  # any space


def import_markdown(
    source: Path | str,
    *,
    space: str | None = None,
    kind: str | None = None,
    reviewer=None,
    strict: bool = False,
    on_file: Callable[[], None] | None = None,
) -> ImportOutcome:
    """Import a folder (or one file) of Markdown as proposals from the ``import``
    agent; with ``reviewer``, each is accepted by that person at once.

    - Notes without a Vetted id and pieces of instruction files become create proposals.
    - Files with the id of a record (an export): unchanged ones are skipped
      without writing anything; edited ones become a revise proposal of that
      record, or of its current successor if it was superseded since (the
      reason says so); retired records and records of another space are
      reported as skipped.
    - The space is ``space``, else the file's own, else the export manifest's,
      else ``personal``; a file whose front matter names another space than
      ``space`` is an error (moving between spaces is `review move`).
    - Duplicates are reported, not errors. Bad files are reported by name and
      the rest imported, unless ``strict``: then any error imports nothing.
    """
    base, files = collect_files(source)
    if space is not None:
        space = v.clean_space(space)
    if kind is not None:
        kind = v.clean_kind(kind)
    if reviewer is not None:
        actions.require_reviewer(reviewer)
    default_space = space or manifest_space(base) or "personal"
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
                        _import_item(
                            item, outcome, space=space, default_space=default_space, agent=agent, reviewer=reviewer
                        )
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


def _import_item(item: Item, outcome: ImportOutcome, *, space: str | None, default_space: str, agent, reviewer):
    item_space = item.space or default_space
    if item.space and space and item.space != space:
        raise MarkdownError(
            f"its front matter says space {item.space!r}, not {space!r}; moving records between spaces is `review move`"
        )
    if item.record_id:
        record = Record.objects.filter(public_id=item.record_id).select_related("superseded_by").first()
        if record is not None:
            return _reimport(item, record, outcome, space=item_space, agent=agent, reviewer=reviewer)
        # An id this server does not know (another server's export): a new note.
    if item.piece and len(item.body.strip()) < v.BODY_MIN:
        raise TooShort(f"too short to stand alone ({len(item.body.strip())} characters; at least {v.BODY_MIN})")
    fields: dict[str, Any] = {
        "kind": item.kind,
        "space": item_space,
        "title": item.title,
        "body": item.body,
        "tags": item.tags,
    }
    for name, value in item.extra.items():
        fields[name] = value
    proposal = actions.propose_create(
        agent=agent(),
        reason=f"Imported from Markdown: {item.label}"[: v.REASON_MAX],
        source_tool="import",
        full_duplicate_check=True,
        **fields,
    )
    outcome.new.append(_maybe_accept(proposal, reviewer))


def _maybe_accept(proposal, reviewer) -> str:
    if reviewer is None:
        return proposal.public_id
    record = actions.accept_proposal(proposal, actor=reviewer, note="Approved at import").result_record
    assert record is not None  # an accepted create always has its record
    return record.public_id


def _reimport(item: Item, record: Record, outcome: ImportOutcome, *, space: str, agent, reviewer):
    if record.space != space:
        raise MarkdownError(f"{record.public_id} is not a {space} record; skipped")
    # The text as written first: an old version approved under looser rules
    # is still "unchanged" even if it would not pass today's write rules.
    as_written = content_checksum(
        kind=str(item.kind),
        space=space,
        title=str(item.title).strip(),
        body=item.body.strip(),
        tags=[str(t) for t in item.tags],
    )
    if as_written == record.approved_checksum:
        outcome.unchanged.append(item.label)
        return
    content = v.clean_content(
        {"kind": item.kind, "space": space, "title": item.title, "body": item.body, "tags": item.tags}
    )
    checksum = content_checksum(**{k: content[k] for k in ("kind", "space", "title", "body", "tags")})
    if checksum == record.approved_checksum:
        outcome.unchanged.append(item.label)  # the text of that version: nothing to do
        return
    current = record
    seen = 0
    while current.status == RecordStatus.SUPERSEDED and current.superseded_by_id and seen < 1000:
        current = Record.objects.select_related("superseded_by").get(pk=current.superseded_by_id)
        seen += 1
    if current.space != space or current.status not in (RecordStatus.APPROVED, RecordStatus.DISPUTED):
        why = "retired" if current.status == RecordStatus.RETIRED else "no longer current in this space"
        outcome.skipped.append({"file": item.label, "reason": f"edited, but {record.public_id} is {why}"})
        return
    if checksum == current.approved_checksum:
        outcome.unchanged.append(item.label)  # the edit is what was approved since
        return
    reason = f"Edited outside Vetted in {item.label}"
    if current is not record:
        reason += (
            f", starting from {record.public_id}, which has since been superseded by "
            f"{current.public_id}: compare with the current text"
        )
    changes = {name: content[name] for name in ("kind", "title", "body", "tags")}
    proposal = actions.propose_revision(
        current,
        agent=agent(),
        reason=reason[: v.REASON_MAX],
        source_tool="import",
        full_duplicate_check=True,
        **changes,
    )
    outcome.revisions.append(_maybe_accept(proposal, reviewer))
