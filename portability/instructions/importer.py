"""Candidates into proposals from the ``import`` agent, through ``reviews.actions``.

Each proposal says where its text came from: the reason names every file and
line, and its metadata keeps them (``import_file`` is the first, which the
inbox filters by, so a reviewer can clear one file's proposals together).
With a reviewer, each proposal is then decided by ``accept_proposal``, the
same decision (and the same permission policy) as a click in the inbox; one
it refuses stays pending and is reported."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from portability.markdown_io.notes import MarkdownError
from reviews import actions
from reviews import validation as v
from reviews.errors import DuplicateContent, VettedError
from reviews.models import Agent

from .files import Refusal, Source, collect_sources, follow_imports, read_source
from .pieces import Candidate, pieces_of

REASON_PLACES = 6  # places named in a reason before "and N more"


@dataclass
class InstructionImport:
    proposals: list[dict[str, Any]] = field(default_factory=list)  # id, file, line, kind, title, also
    approved: list[str] = field(default_factory=list)  # record ids, with a reviewer
    left_pending: list[dict[str, str]] = field(default_factory=list)  # the decision refused: id, reason
    duplicates: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "proposals": len(self.proposals),
            "approved": len(self.approved),
            "left_pending": self.left_pending,
            "duplicates": self.duplicates,
            "skipped": self.skipped,
            "refused": self.refused,
            "ids": [p["id"] for p in self.proposals],
        }

    def by_file(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for p in self.proposals:
            grouped.setdefault(p["file"], []).append(p)
        return grouped

    def human(self) -> str:
        decided = f"{len(self.approved)} approved, " if self.approved or self.left_pending else ""
        return (
            f"{len(self.files)} file(s) read: {len(self.proposals)} proposal(s) ({decided}"
            f"{len(self.proposals) - len(self.approved)} waiting for review); {len(self.duplicates)} already known; "
            f"{len(self.skipped)} left out; {len(self.refused)} refused."
        )


def _key(text: str) -> str:
    """Two pieces are the same text when only case, spacing and punctuation differ."""
    return re.sub(r"\W+", " ", text.lower()).strip()


def _reason(candidate: Candidate) -> str:
    places = [candidate.place, *candidate.also]
    shown = ", ".join(places[:REASON_PLACES])
    if len(places) > REASON_PLACES:
        shown += f" and {len(places) - REASON_PLACES} more"
    reason = f"Imported from {candidate.tool} instructions: {shown}"
    if candidate.applies_to:
        reason += f" (applies to {', '.join(candidate.applies_to)})"
    return reason[: v.REASON_MAX]


def _gather(paths: list[Path | str], any_name: bool, default_kind: str | None, outcome: InstructionImport):
    sources, refusals = collect_sources(paths, any_name=any_name)
    outcome.refused.extend(r.as_dict() for r in refusals)
    seen = {s.path.resolve() for s in sources}
    queue: list[Source] = list(sources)
    candidates: dict[str, Candidate] = {}
    index = 0
    while index < len(queue):
        source = queue[index]
        index += 1
        try:
            text = read_source(source.path)
        except MarkdownError as exc:
            outcome.refused.append(Refusal(source.label, str(exc)).as_dict())
            continue
        outcome.files.append(source.label)
        if not source.imported_by:  # followed once: an imported file's own imports are not
            more, refused = follow_imports(source, text, seen)
            queue.extend(more)
            outcome.refused.extend(r.as_dict() for r in refused)
        found, left_out = pieces_of(source.label, text, tool=source.tool, default_kind=default_kind)
        outcome.skipped.extend(
            {"file": where.split(": ", 1)[0], "reason": where.split(": ", 1)[1]} for where in left_out
        )
        for candidate in found:
            if source.imported_by:
                candidate.tool = f"{candidate.tool} (imported by {source.imported_by})"
            key = _key(candidate.item.body)
            if key in candidates:
                candidates[key].also.append(candidate.place)
            else:
                candidates[key] = candidate
    return list(candidates.values())


def import_instructions(
    paths: list[Path | str],
    *,
    space: str = "personal",
    kind: str | None = None,
    reviewer=None,
    any_name: bool = False,
    on_candidate: Callable[[], None] | None = None,
) -> InstructionImport:
    """Read the instruction files under ``paths`` and propose each piece once.

    Refuses by name what it cannot read (binary, too long, not UTF-8, a link
    or import outside the folders given) and imports the rest. Pieces already
    live as a record or pending proposal are reported as duplicates; pieces
    too short to stand alone as skipped. Without ``reviewer`` nothing is approved."""
    space = v.clean_space(space)
    if kind is not None:
        kind = v.clean_kind(kind)
    if reviewer is not None:
        actions.require_reviewer(reviewer)
    outcome = InstructionImport()
    candidates = _gather(paths, any_name, kind, outcome)
    agent_box: list[Agent] = []
    for candidate in candidates:
        item = candidate.item
        where = candidate.place
        try:
            if len(item.body.strip()) < v.BODY_MIN:
                outcome.skipped.append(
                    {"file": where, "reason": f"too short to stand alone (at least {v.BODY_MIN} characters)"}
                )
                continue
            with transaction.atomic():  # a savepoint: a refused piece leaves no trace
                if not agent_box:
                    agent_box.append(actions.import_agent())
                metadata: dict[str, Any] = {
                    "import_file": candidate.file,
                    "import_line": candidate.line,
                    "import_places": [where, *candidate.also],
                }
                if candidate.applies_to:
                    metadata["applies_to"] = candidate.applies_to
                proposal = actions.propose_create(
                    agent=agent_box[0],
                    reason=_reason(candidate),
                    source_tool="import",
                    full_duplicate_check=True,
                    kind=item.kind,
                    space=space,
                    title=item.title,
                    body=item.body,
                    tags=item.tags,
                    metadata=metadata,
                )
        except DuplicateContent as exc:
            outcome.duplicates.append({"file": where, "existing_id": exc.existing_id or ""})
            continue
        except VettedError as exc:
            outcome.skipped.append({"file": where, "reason": exc.message})
            continue
        finally:
            if agent_box and not Agent.objects.filter(pk=agent_box[0].pk).exists():
                agent_box.clear()  # its creation was rolled back with the piece
            if on_candidate:
                on_candidate()
        outcome.proposals.append(
            {
                "id": proposal.public_id,
                "file": candidate.file,
                "line": candidate.line,
                "kind": proposal.kind,
                "title": proposal.title,
                "also": candidate.also,
            }
        )
        if reviewer is not None:
            try:
                decided = actions.accept_proposal(proposal, actor=reviewer, note="Approved at import")
            except VettedError as exc:
                outcome.left_pending.append({"id": proposal.public_id, "reason": exc.message})
            else:
                if decided.result_record is not None:
                    outcome.approved.append(decided.result_record.public_id)
                else:  # a second approval is still needed
                    outcome.left_pending.append({"id": proposal.public_id, "reason": "waits for another approval"})
    return outcome
