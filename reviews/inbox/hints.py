"""What a reviewer is shown beside a create or a revise: the approved records
and pending proposals that say nearly the same thing, and which of them it
may contradict (the quality check's rule, retrieval.quality.contradiction_reasons),
each with what differs and a labelled similarity.

For the reviewer only: nothing here reaches an agent. A reviewer is shown
records of the spaces they may read and proposals of the spaces they decide
in (reviews.inbox.viewer, issue 16): a look-alike in another client's space
does not exist for them.
An agent is never told of another agent's proposal; the reject-as-duplicate
action (reviews.actions.reject_as_duplicate) decides what its note may name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from retrieval.embeddings import Embedder, get_embedder
from retrieval.quality import contradiction_reasons
from retrieval.similar import pending_similarities, pending_vectors, similar_pending, similar_records
from reviews import space_access
from reviews.models import Proposal, ProposalAction, ProposalState, Record

from . import viewer

# Below this cosine two texts are not worth a reviewer's glance.
FLOOR = 0.5
# Between the contradiction threshold and VETTED_NEAR_DUPLICATE: "close".
CLOSE = 0.75
RECORDS_SHOWN = 5
PENDING_SHOWN = 5


def similarity_label(similarity: float) -> str:
    """A cosine as a reviewer reads it: the number and what it means here."""
    if similarity >= 0.9999:
        word = "identical"
    elif similarity >= settings.VETTED_NEAR_DUPLICATE:
        word = "very close"
    elif similarity >= CLOSE:
        word = "close"
    elif similarity >= settings.VETTED_CONTRADICTION_SIMILARITY:
        word = "related"
    else:
        word = "loosely related"
    return f"similarity {similarity:.2f} ({word})"


@dataclass
class Match:
    """One approved record or pending proposal like the proposal at hand."""

    similarity: float
    record: Record | None = None
    proposal: Proposal | None = None
    differs: list[str] = field(default_factory=list)  # non-empty: a possible contradiction
    # A pending revise of the same record as this proposal, or of a record in these hints.
    same_target: bool = False

    @property
    def label(self) -> str:
        return similarity_label(self.similarity)

    @property
    def contradiction(self) -> bool:
        return bool(self.differs)

    @property
    def close(self) -> bool:
        """Close enough to offer "merge into" / "reject as duplicate of"."""
        return self.similarity >= settings.VETTED_CONTRADICTION_SIMILARITY or self.same_target

    @property
    def public_id(self) -> str:
        return self.record.public_id if self.record is not None else self.proposal.public_id  # type: ignore[union-attr]


@dataclass
class Hints:
    records: list[Match] = field(default_factory=list)
    pending: list[Match] = field(default_factory=list)

    @property
    def contradictions(self) -> list[Match]:
        return [m for m in self.records + self.pending if m.contradiction]


def _text(title: str, body: str) -> str:
    return f"{title}\n{body}"


def _viewer_spaces() -> tuple[list[str], list[str]]:
    """(readable, deciding) spaces of the person viewing; every space outside
    a request (a bench or a command run by the operator)."""
    readable, deciding = viewer.readable(), viewer.deciding()
    if readable is None or deciding is None:
        every = space_access.space_slugs()
        return every, every
    return readable, deciding


def for_proposal(proposal: Proposal, embedder: Embedder | None = None) -> Hints:
    """The hints for a pending create or revise (empty for anything else).
    Raises what the index raises (VettedError, IndexModelMismatch): the view
    shows it in place of the hint."""
    if proposal.action not in (ProposalAction.CREATE, ProposalAction.REVISE) or not proposal.title:
        return Hints()
    readable, deciding = _viewer_spaces()
    text = _text(proposal.title, proposal.body)
    # inbox-fast: the proposal's chunk vectors once, from the per-process cache of pending proposals'
    # vectors (keyed by its content checksum), not embedded again by each of the three look-ups below.
    embedder = embedder or get_embedder()
    vectors = pending_vectors.for_proposals([proposal], embedder)[proposal.pk]
    own_target = proposal.target.public_id if proposal.target is not None else ""
    found = similar_records(
        proposal.title,
        proposal.body,
        scopes=readable,
        tags=proposal.tags,
        threshold=FLOOR,
        limit=3 * RECORDS_SHOWN,
        exclude_ids=[own_target] if own_target else [],
        embedder=embedder,
        vectors=vectors,
    )
    records = [
        Match(
            h.similarity,
            record=h.record,
            differs=contradiction_reasons(text, _text(h.record.title, h.record.body), h.similarity),
        )
        for h in found
    ]
    # Contradictions first (they are what a glance must not miss), then the closest.
    records.sort(key=lambda m: (not m.contradiction, -m.similarity))
    records = records[:RECORDS_SHOWN]

    waiting = {
        h.proposal.pk: h
        for h in similar_pending(
            proposal.title,
            proposal.body,
            scope=deciding,
            tags=proposal.tags,
            threshold=settings.VETTED_CONTRADICTION_SIMILARITY,
            limit=PENDING_SHOWN,
            exclude_ids=[proposal.public_id],
            embedder=embedder,
            vectors=vectors,
        )
    }
    # Pending revises of this proposal's record, or of a record shown above,
    # however worded: two changes of one record compete for it.
    targets = [m.record.pk for m in records if m.record is not None] + ([proposal.target_id] if own_target else [])
    rivals = list(
        Proposal.objects.filter(state=ProposalState.PENDING, action=ProposalAction.REVISE, target_id__in=targets)
        .filter(space_access.proposals_in(deciding))
        .exclude(pk=proposal.pk)
        .select_related("agent", "target")[:PENDING_SHOWN]
    )
    same_target = {p.pk for p in rivals}
    missing = [p for p in rivals if p.pk not in waiting]
    found_rivals = pending_similarities(
        proposal.title, proposal.body, missing, tags=proposal.tags, embedder=embedder, vectors=vectors
    )
    for hit in found_rivals:
        waiting[hit.proposal.pk] = hit
    pending = [
        Match(
            h.similarity,
            proposal=h.proposal,
            differs=contradiction_reasons(text, _text(h.proposal.title, h.proposal.body), h.similarity),
            same_target=h.proposal.pk in same_target,
        )
        for h in waiting.values()
    ]
    pending.sort(key=lambda m: (not m.same_target, not m.contradiction, -m.similarity))
    return Hints(records=records, pending=pending[: PENDING_SHOWN + len(same_target)])
