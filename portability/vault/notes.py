"""What each vault file says: a record's note (export_markdown's format plus
wikilinks), a pending proposal's note, a space's index note; and a record
note read back."""

from __future__ import annotations

from portability.markdown_io import file_name, render_note, render_record, split_front_matter
from portability.markdown_io.notes import tag_list
from reviews.models import Proposal, Record

LINKS = "<!-- vetted:links -->"
PENDING_DIR = "_pending"
INBOX_DIR = "_inbox"
INDEX_NAME = "_index.md"


def link(record: Record) -> str:
    return f"[[{file_name(record)[:-3]}|{record.title}]]"


def record_note(record: Record) -> str:
    text = render_record(record)
    links = []
    if record.supersedes is not None and record.supersedes.space == record.space:
        links.append(f"Supersedes: {link(record.supersedes)}")
    if record.superseded_by is not None and record.superseded_by.space == record.space:
        links.append(f"Superseded by: {link(record.superseded_by)}")
    if links:
        text += f"\n{LINKS}\n" + "\n".join(links) + "\n"
    return text


def pending_note(proposal: Proposal) -> str:
    front = {
        "proposal": proposal.public_id,
        "action": proposal.action,
        "proposed_by": proposal.proposer_label,
        "space": proposal.space or (proposal.target.space if proposal.target else ""),
        "target": proposal.target.public_id if proposal.target else None,
        "reason": proposal.reason,
    }
    title = proposal.title or (proposal.target.title if proposal.target else proposal.public_id)
    target = f"Changes {link(proposal.target)}.\n\n" if proposal.target is not None else ""
    body = proposal.body or (proposal.target.body if proposal.target else "")
    return render_note(front, f"# {title}\n\n_Waiting for review; edits here are not read._\n\n{target}{body}")


def index_note(space: str, records: list[Record]) -> str:
    lines = [f"# {space}", "", f"{len(records)} approved record(s), kept in step by Vetted.", ""]
    by_kind: dict[str, list[Record]] = {}
    for record in records:
        by_kind.setdefault(record.kind, []).append(record)
    for kind in sorted(by_kind):
        lines += [f"## {kind}", ""]
        lines += [f"- {link(r)}" for r in sorted(by_kind[kind], key=lambda r: r.title.lower())]
        lines.append("")
    return "\n".join(lines)


def read_record_note(text: str) -> dict:
    """The fields a person may change in a record's note: title, body, kind, tags."""
    front, body = split_front_matter(text.replace("\r\n", "\n"))
    if LINKS in body:
        body = body[: body.index(LINKS)]
    return {
        "title": str(front.get("title") or "").strip(),
        "body": body.strip(),
        "kind": str(front.get("kind") or "").strip(),
        "tags": tag_list(front.get("tags")),
    }
