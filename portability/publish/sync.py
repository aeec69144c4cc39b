"""One file brought in step with its selection.

A block whose digest matches what Vetted last wrote is simply rewritten. One
that was edited by hand is not overwritten: each edited record section
becomes a revise proposal from the publishing person, new text a create
proposal, a removed section a retirement proposal (all through
``reviews.actions``), and the file is left as it is while any of them waits.
Once they are decided, the next sync writes what is approved (the accepted
edit, or the approved text again after a rejection)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from common.files import write_atomic
from reviews import actions
from reviews import validation as v
from reviews.errors import DuplicateContent, VettedError
from reviews.models import Proposal, ProposalAction, ProposalState, Record

from . import block as blk
from . import memo
from .budgets import budget_for, cut_order_key
from .selection import Selection

MDC_HEAD = "---\ndescription: Approved memory from Vetted\nalwaysApply: true\n---\n\n"
SOURCE_TOOL = "publish"


@dataclass
class SyncResult:
    path: str
    state: str  # written, unchanged, held
    records: list[str] = field(default_factory=list)
    left_out: int = 0  # records cut to stay within the budget
    proposals: list[str] = field(default_factory=list)  # from hand edits (new or still waiting)
    diffs: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "state": self.state,
            "records": self.records,
            "left_out": self.left_out,
            "proposals": self.proposals,
            "problems": self.problems,
        }


def section_text(record: Record) -> str:
    return f"### {record.title}\n\n{record.body.strip()}"


def _parse_section(text: str) -> tuple[str, str]:
    lines = text.strip("\n").split("\n")
    title = lines[0][4:].strip() if lines and lines[0].startswith("### ") else ""
    return title, "\n".join(lines[1:]).strip()


def _fit(records: list[Record], budget: int, outside: int) -> tuple[list[Record], int]:
    """The records kept within ``budget`` characters for the whole file, in the cut order."""
    ordered = sorted(records, key=lambda r: cut_order_key(r.kind, r.approved_at.timestamp(), r.public_id))
    kept: list[Record] = []
    for record in ordered:
        trial = kept + [record]
        size = outside + len(
            blk.render_block(blk.render_inner([(r.public_id, section_text(r)) for r in trial], "x" * 80))
        )
        if size > budget:
            continue
        kept = trial
    return kept, len(records) - len(kept)


def render_for(records: list[Record], budget: int, outside: int) -> tuple[str, list[Record], int]:
    kept, left_out = _fit(records, budget, outside)
    footer = f"<!-- {left_out} more record(s) left out to stay within {budget} characters -->" if left_out else ""
    return blk.render_block(blk.render_inner([(r.public_id, section_text(r)) for r in kept], footer)), kept, left_out


def _earlier(
    user: str, action: str, target: Record | None, body: str | None, since, title: str | None = None
) -> Proposal | None:
    """This person's latest proposal of the same edit since Vetted last wrote the
    file, in any state: pending, it holds the block; decided, it stands."""
    rows = Proposal.objects.filter(agent=None, proposed_by_user=user, action=action, target=target)
    if body is not None:
        rows = rows.filter(body=v.normalise_text(body).strip())
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if title is not None:
        rows = rows.filter(title=v.normalise_text(title).strip())
    return rows.order_by("-id").first()


def _file_edits(path: Path, found: blk.Block, selection: Selection, result: SyncResult) -> bool:
    """File each hand edit as a proposal (once); True while any of them waits for a decision."""
    last = memo.load(path)
    since = last.written_at
    user = selection.user()
    name = user.get_username()
    parts = blk.parts(found.inner)
    waiting = False
    label = path.name
    reason = f"Edited by hand in the block Vetted publishes in {label}"
    for record_id, text in parts.sections.items():
        record = Record.objects.filter(public_id=record_id).first()
        if record is None or text.strip() == section_text(record):
            continue
        title, body = _parse_section(text)
        title = title or record.title
        result.diffs.append(
            "".join(
                difflib.unified_diff(
                    (section_text(record) + "\n").splitlines(keepends=True),
                    (text.strip() + "\n").splitlines(keepends=True),
                    f"{record_id} (approved)",
                    f"{record_id} (in {label})",
                )
            )
        )
        waiting |= _propose(
            result,
            _earlier(name, ProposalAction.REVISE, record, body, since, title),
            lambda r=record, t=title, b=body: actions.propose_file_revision(
                r, user=user, reason=reason, source_tool=SOURCE_TOOL, title=t, body=b
            ),
        )
    if parts.loose:
        title = parts.loose.strip().split("\n", 1)[0].lstrip("#-* ").strip()[:80]
        result.diffs.append(f"new text in the block of {label}:\n{parts.loose}\n")
        waiting |= _propose(
            result,
            _earlier(name, ProposalAction.CREATE, None, parts.loose, since),
            lambda: actions.propose_file_create(
                user=user,
                reason=f"Written by hand in the block Vetted publishes in {label}",
                source_tool=SOURCE_TOOL,
                kind="procedure",
                space=selection.spaces[0],
                title=title,
                body=parts.loose,
                tags=[],
            ),
        )
    # A section of the last write that is gone: the person took the record out of the file.
    for record_id in last.records:
        if record_id in parts.sections:
            continue
        record = Record.objects.filter(public_id=record_id).first()
        if record is None or record.withhold_reason() is not None:
            continue  # it left the block for its own reasons
        result.diffs.append(f"{record_id} ({record.title}) removed from the block of {label}\n")
        waiting |= _propose(
            result,
            _earlier(name, ProposalAction.RETIRE, record, None, since),
            lambda r=record: actions.propose_file_retirement(
                r,
                user=user,
                reason=f"Removed by hand from the block Vetted publishes in {label}",
                source_tool=SOURCE_TOOL,
            ),
        )
    return waiting


def _propose(result: SyncResult, earlier: Proposal | None, make) -> bool:
    """Make the proposal unless this edit was proposed before; True while it waits for a decision."""
    if earlier is not None:
        if earlier.state == ProposalState.PENDING:
            result.proposals.append(earlier.public_id)
            return True
        return False  # decided: the decision stands and the block is written again
    try:
        proposal = make()
    except DuplicateContent as exc:
        result.problems.append(exc.message)  # someone else's proposal or a record already says it
        return False
    except VettedError as exc:
        result.problems.append(exc.message)
        return True  # not filed: keep the person's text rather than overwrite it
    result.proposals.append(proposal.public_id)
    return True


def publish_file(path: Path | str, selection: Selection, *, dry_run: bool = False) -> SyncResult:
    """Bring the managed block of ``path`` in step with ``selection`` (created with the file if missing)."""
    path = Path(path)
    selection = selection.checked()
    result = SyncResult(path=str(path), state="unchanged")
    try:
        raw = path.read_bytes() if path.exists() else b""
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        result.state, result.problems = "held", ["not UTF-8 text; left alone"]
        return result
    try:
        found = blk.find(text)
    except blk.BlockError as exc:
        result.state, result.problems = "held", [str(exc)]
        return result
    if found is not None and found.edited and dry_run:
        result.state, result.problems = (
            "held",
            ["edited by hand inside the block; a real run files the edits as proposals"],
        )
        return result
    if found is not None and found.edited and _file_edits(path, found, selection, result):
        result.state = "held"
        return result
    if not text and path.suffix == ".mdc":
        text = MDC_HEAD
    outside = len(text) - (found.end - found.start if found else 0)
    new_block, kept, result.left_out = render_for(selection.records(), budget_for(path), outside)
    result.records = [r.public_id for r in kept]
    updated = blk.replace(text, found, new_block)
    if updated != text:
        result.state = "written"
        if not dry_run:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, updated.encode("utf-8"))
    if not dry_run and (updated != text or memo.load(path).records != result.records):
        memo.save(path, result.records)
    return result
