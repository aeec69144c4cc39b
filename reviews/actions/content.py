"""A record's or proposal's content as the actions build on it: its content
fields, the look-alike skeleton of its text, and the approved text a change
starts from (never text changed outside Vetted)."""

from __future__ import annotations

from typing import Any

from .. import confusables
from .. import validation as v
from ..errors import ChecksumMismatch
from ..models import Proposal, Record


def content_of(obj: Record | Proposal) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in v.CONTENT_FIELDS}


def skeleton_of(content: dict[str, Any]) -> str:
    return confusables.content_key(
        kind=content["kind"], space=content["space"], title=content["title"], body=content["body"], tags=content["tags"]
    )


def outside_edit_refusal(record: Record, doing: str) -> ChecksumMismatch:
    """The refusal for building on text nobody approved: ``record`` was
    changed outside Vetted (its text no longer matches approved_checksum)."""
    if record.approved_text() is None:
        way_out = (
            "no approved copy of its text is kept (it was edited before Vetted kept one), so it cannot be "
            f"restored: approve its current text (`review approve-current {record.public_id} --note ...`) "
            "or retire it"
        )
    else:
        way_out = (
            "restore the approved text or approve the current text first "
            f"(`review restore {record.public_id}` or `review approve-current {record.public_id} --note ...`)"
        )
    return ChecksumMismatch(
        f"Cannot {doing} {record.public_id}: it was changed outside Vetted since it was approved; {way_out}.",
        record=record.public_id,
    )


def approved_base(record: Record, doing: str) -> dict[str, Any]:
    """What a change of ``record`` starts from: its content fields, with the
    approved kind, space, title, body and tags, never text changed outside
    Vetted (else a tag-only revision would carry that text into a new approved
    record). review_by is left for the kind's default. Raises ChecksumMismatch
    when the record was edited and no approved copy is kept."""
    base = content_of(record)
    if record.edited_since_approval:
        approved = record.approved_text()
        if approved is None:
            raise outside_edit_refusal(record, doing)
        base.update(approved)
    base["review_by"] = None
    return base
