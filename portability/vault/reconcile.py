"""One pass over a vault: the person's edits, deletions and new inbox notes
become proposals from them (through ``reviews.actions``, never a decision),
then the files are brought in step with what is deliverable and pending.

A file whose edit (or deletion) waits for a decision is held: Vetted neither
overwrites nor recreates it until the proposal is decided, so neither the
person's change nor a decision made meanwhile is lost. Once decided, the
decision stands and the file is written from what is approved."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db.models import Q

from common.files import write_atomic
from portability.markdown_io import file_name, parse_note
from portability.markdown_io.notes import MarkdownError
from portability.markdown_io.parse import read_text
from reviews import actions
from reviews.errors import ValidationFailed, VettedError
from reviews.models import Proposal, ProposalState, Record, RecordStatus
from reviews.space_access import deciding_spaces, owned_spaces, readable_spaces

from . import notes, state

SOURCE_TOOL = "vault"


@dataclass
class VaultResult:
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # files waiting for a decision on the person's change
    proposals: list[str] = field(default_factory=list)  # filed in this pass
    problems: list[dict[str, str]] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "written": len(self.written),
            "removed": len(self.removed),
            "held": self.held,
            "proposals": self.proposals,
            "problems": self.problems,
        }


def _person(name: str):
    user = get_user_model().objects.filter(username=name, is_active=True).first()
    if user is None:
        raise state.VaultError(f"No active account named {name!r}.")
    return user


def _current(record: Record) -> Record:
    """The live version of ``record``'s chain (a revision decided meanwhile replaced it)."""
    seen = 0
    while record.status == RecordStatus.SUPERSEDED and record.superseded_by_id and seen < 1000:
        record = Record.objects.get(pk=record.superseded_by_id)
        seen += 1
    return record


def _decided(entry: dict, sha: str | None) -> bool | None:
    """For a change already filed: True if decided, False if it waits, None if this is a new change."""
    if not entry.get("proposal") or entry.get("proposed_sha") != sha:
        return None
    proposal = Proposal.objects.filter(public_id=entry["proposal"]).first()
    return proposal is None or proposal.state != ProposalState.PENDING


def _filed(entry: dict, proposal: Proposal, sha: str | None, result: VaultResult) -> bool:
    entry["proposal"], entry["proposed_sha"] = proposal.public_id, sha
    result.proposals.append(proposal.public_id)
    return True


def _edited(user, rel: str, entry: dict, data: bytes, result: VaultResult) -> bool:
    """An edited record note; True while the file must be held."""
    sha = state.digest(data)
    decided = _decided(entry, sha)
    if decided is not None:
        return not decided
    record = Record.objects.filter(public_id=entry["id"]).first()
    if record is None:
        return False
    current = _current(record)
    if current.status not in (RecordStatus.APPROVED, RecordStatus.DISPUTED):
        result.problems.append({"file": rel, "problem": f"edited, but {current.public_id} is {current.status}"})
        return True  # keep the person's text; nothing to revise
    try:
        fields = notes.read_record_note(data.decode("utf-8"))
        changes = {k: value for k, value in fields.items() if value not in ("", [])}
        changes.setdefault("tags", [])
        proposal = actions.propose_file_revision(
            current,
            user=user,
            reason=f"Edited in the vault: {rel}",
            source_tool=SOURCE_TOOL,
            **changes,
        )
    except ValidationFailed as exc:
        if "identical" in str(exc.fields.get("body", "")):
            return False  # put back as approved: nothing to propose
        result.problems.append({"file": rel, "problem": exc.message})
        return True
    except (VettedError, MarkdownError, UnicodeDecodeError) as exc:
        result.problems.append({"file": rel, "problem": getattr(exc, "message", str(exc))})
        return True
    return _filed(entry, proposal, sha, result)


def _deleted(user, rel: str, entry: dict, result: VaultResult) -> bool:
    """A record note the person deleted; True while it must not be recreated."""
    decided = _decided(entry, None)
    if decided is not None:
        return not decided
    record = Record.objects.filter(public_id=entry["id"]).first()
    if record is None or record.withhold_reason() is not None:
        return False  # not deliverable any more: it leaves the vault anyway
    try:
        proposal = actions.propose_file_retirement(
            record, user=user, reason=f"Deleted from the vault: {rel}", source_tool=SOURCE_TOOL
        )
    except VettedError as exc:
        result.problems.append({"file": rel, "problem": exc.message})
        return False
    return _filed(entry, proposal, None, result)


def _inbox(user, root: Path, default_space: str, result: VaultResult) -> None:
    folder = root / notes.INBOX_DIR
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.md")):
        rel = path.relative_to(root).as_posix()
        try:
            item = parse_note(rel, path.stem, read_text(path), default_kind=None)
            proposal = actions.propose_file_create(
                user=user,
                reason=f"New note in the vault: {rel}",
                source_tool=SOURCE_TOOL,
                kind=item.kind,
                space=item.space or default_space,
                title=item.title,
                body=item.body,
                tags=item.tags,
            )
        except (VettedError, MarkdownError) as exc:
            result.problems.append({"file": rel, "problem": getattr(exc, "message", str(exc))})
            continue
        result.proposals.append(proposal.public_id)
        path.unlink(missing_ok=True)  # it now shows under _pending/ until decided


def _desired(user) -> dict[str, tuple[str, str, bytes]]:
    """``{relative path: (id, type, bytes)}`` for the spaces the person may read."""
    spaces = readable_spaces(user)
    files: dict[str, tuple[str, str, bytes]] = {}
    rows = (
        Record.objects.deliverable(spaces)
        .select_related("supersedes", "superseded_by", "approved_by", "proposed_by")
        .order_by("public_id")
    )
    by_space: dict[str, list[Record]] = {space: [] for space in spaces}
    for record in rows:
        if record.withhold_reason() is not None:
            continue
        by_space.setdefault(record.space, []).append(record)
        files[f"{record.space}/{file_name(record)}"] = (record.public_id, "record", notes.record_note(record).encode())
    for space, records in by_space.items():
        files[f"{space}/{notes.INDEX_NAME}"] = (space, "index", notes.index_note(space, records).encode())
    # What waits is shown as the inbox shows it: only in spaces the person decides in.
    deciding = deciding_spaces(user)
    pending = Proposal.objects.filter(state=ProposalState.PENDING).filter(
        Q(space__in=deciding, target__isnull=True) | Q(target__space__in=deciding)
    )
    for proposal in pending.select_related("target", "agent").order_by("public_id"):
        files[f"{notes.PENDING_DIR}/{proposal.public_id}.md"] = (
            proposal.public_id,
            "pending",
            notes.pending_note(proposal).encode(),
        )
    return files


def reconcile(root: Path | str, person: str) -> VaultResult:
    """Bring the vault at ``root`` in step for ``person`` (one pass; safe to repeat)."""
    root = Path(root)
    user = _person(person)
    manifest = state.load(root, person)
    root.mkdir(parents=True, exist_ok=True)
    result = VaultResult()
    held: set[str] = set()
    for rel, entry in manifest.items():
        if entry.get("type") != "record":
            continue
        path = root / rel
        if not path.exists():
            if _deleted(user, rel, entry, result):
                held.add(rel)
            continue
        data = path.read_bytes()
        if state.digest(data) != entry["sha"] and _edited(user, rel, entry, data, result):
            held.add(rel)
    own = owned_spaces(user)
    readable = readable_spaces(user)
    _inbox(user, root, next((s for s in readable if s in own), readable[0] if readable else "personal"), result)
    desired = _desired(user)
    for rel, (ident, kind, data) in desired.items():
        if rel in held:
            continue
        path = root / rel
        if not (path.exists() and path.read_bytes() == data):
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data)
            result.written.append(rel)
        manifest[rel] = {"id": ident, "type": kind, "sha": state.digest(data)}
    for rel in sorted(set(manifest) - set(desired)):
        if rel in held:
            continue
        (root / rel).unlink(missing_ok=True)
        result.removed.append(rel)
        del manifest[rel]
    result.held = sorted(held)
    state.save(root, person, manifest)
    return result
