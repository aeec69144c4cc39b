"""The JSON shapes an agent receives: records, proposals, why a record is withheld."""

from __future__ import annotations

from typing import Any

from retrieval.gate import REASONS
from reviews.formats import iso
from reviews.models import SCOPES, Proposal, ProposalState, Record

EXCERPT_CHARS = 280

WITHHELD_EXPLAINED = {
    "retired": "a reviewer retired it: it no longer holds",
    "superseded": "a newer version replaced it",
    "disputed": "an agent disputed it and a reviewer has not decided yet",
    "edited": "its text changed after approval (checksum mismatch) and it needs review again",
    "expired": "its validity window has ended",
    "not_yet_valid": "its validity window has not started",
    "overdue": "it is past its review date and waits for a reviewer to verify it",
}
assert set(WITHHELD_EXPLAINED) == set(REASONS)


def record_summary(record: Record) -> dict:
    body = record.body
    excerpt = body if len(body) <= EXCERPT_CHARS else body[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
    return {
        "id": record.public_id,
        "title": record.title,
        "kind": record.kind,
        "scope": record.scope,
        "tags": record.tags,
        "excerpt": excerpt,
        "approved_at": iso(record.approved_at),
        "verified_at": iso(record.verified_at),
        "review_by": iso(record.review_by),
    }


def record_full(record: Record, scopes=SCOPES) -> dict:
    """Every field an agent may see. Links to versions in scopes the reader
    cannot read (a record moved from personal to team) are left out."""
    supersedes = record.supersedes if record.supersedes_id else None
    return {
        "id": record.public_id,
        "title": record.title,
        "kind": record.kind,
        "scope": record.scope,
        "tags": record.tags,
        "body": record.body,
        "status": record.status,
        "approved_at": iso(record.approved_at),
        "approved_by": record.approved_by.get_username() if record.approved_by is not None else None,
        "verified_at": iso(record.verified_at),
        "review_by": iso(record.review_by),
        "valid_from": iso(record.valid_from),
        "valid_until": iso(record.valid_until),
        "supersedes": supersedes.public_id if supersedes is not None and supersedes.scope in scopes else None,
        "checksum": record.approved_checksum,
        "confidence": record.confidence,
        "source_tool": record.source_tool,
    }


def proposal_shape(proposal: Proposal) -> dict:
    data: dict[str, Any] = {
        "id": proposal.public_id,
        "action": proposal.action,
        "state": proposal.state,
        "target": proposal.target.public_id if proposal.target is not None else None,
        # A retirement or dispute names its target by the approved title, never by text changed outside Vetted.
        "title": proposal.title
        or ((proposal.target.approved_version() or {}).get("title", "") if proposal.target is not None else ""),
        "scope": proposal.scope or (proposal.target.scope if proposal.target is not None else ""),
        "reason": proposal.reason,
        "created_at": iso(proposal.created_at),
        "decided_at": iso(proposal.decided_at),
        "decision_note": proposal.decision_note,
        "result_record": proposal.result_record.public_id if proposal.result_record is not None else None,
        "reviewer_changed": sorted(proposal.reviewer_changes) if proposal.reviewer_changes else [],
    }
    data["next"] = {
        str(ProposalState.PENDING): "Waiting for a reviewer; check again later.",
        ProposalState.ACCEPTED: (
            "Accepted"
            + (f"; the record is {data['result_record']}" if data["result_record"] else "")
            + (" (the reviewer edited it before accepting)" if data["reviewer_changed"] else "")
            + "."
        ),
        ProposalState.REJECTED: (
            "Rejected; read decision_note for why, and do not propose the same thing again unchanged."
        ),
        ProposalState.WITHDRAWN: "Withdrawn by the agent.",
    }.get(proposal.state, "")
    return data
