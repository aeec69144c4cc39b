"""The JSON shapes an agent receives: records, proposals, why a record is withheld."""

from __future__ import annotations

from typing import Any

from retrieval.gate import REASONS

# The record shapes live below the gateway, where the `records` command uses them too.
from retrieval.record_shapes import EXCERPT_CHARS, record_full, record_summary
from reviews.formats import iso
from reviews.models import Proposal, ProposalState

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

__all__ = ["EXCERPT_CHARS", "WITHHELD_EXPLAINED", "proposal_shape", "record_full", "record_summary"]


def proposal_shape(proposal: Proposal) -> dict:
    data: dict[str, Any] = {
        "id": proposal.public_id,
        "action": proposal.action,
        "state": proposal.state,
        "target": proposal.target.public_id if proposal.target is not None else None,
        # A retirement or dispute names its target by the approved title, never by text changed outside Vetted.
        "title": proposal.title
        or ((proposal.target.approved_version() or {}).get("title", "") if proposal.target is not None else ""),
        "space": proposal.space or (proposal.target.space if proposal.target is not None else ""),
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
