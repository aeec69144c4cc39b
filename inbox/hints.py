"""What a reviewer is shown beside a proposal: the approved records and
pending proposals that say nearly the same thing, and which of them it may
contradict (the quality check's rule, retrieval.quality.contradiction_reasons),
each with what differs and a labelled similarity; and every other pending
proposal about the same record (a revision, a retirement, a dispute), so two
agents' changes of one record each show the other.

Disputed, changed-outside and overdue records are shown too, marked so: they
are what a reviewer most needs to meet beside a proposal about the same thing.
"Merge into a revision of" and "Reject as duplicate of" are offered only where
the match is one piece of knowledge with the proposal (retrieval.quality:
DUPLICATE_SIMILARITY, measured on the labelled pairs); a contradicting match
is never a duplicate, though a create may still be merged into a revision of
the record it updates.

For the reviewer only: nothing here reaches an agent. A reviewer is shown
records of the spaces they may read and proposals of the spaces they decide
in (inbox.viewer): a look-alike in another client's space does not
exist for them.
An agent is never told of another agent's proposal; the reject-as-duplicate
action (reviews.actions.reject_as_duplicate) decides what its note may name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from retrieval.embeddings import Embedder, get_embedder
from retrieval.quality import DUPLICATE_SIMILARITY, compare_pair
from retrieval.similar import pending_similarities, pending_vectors, similar_pending, similar_records
from reviews import space_access
from reviews.models import Proposal, ProposalAction, ProposalState, Record

from . import viewer

# Below this cosine two texts are not worth a reviewer's glance.
FLOOR = 0.5
# Between the contradiction threshold and VETTED_NEAR_DUPLICATE: "close"; from
# here merge / reject-as-duplicate may be offered (the same measured value).
CLOSE = DUPLICATE_SIMILARITY
RECORDS_SHOWN = 5
PENDING_SHOWN = 5
# Withheld records a reviewer is still shown beside a proposal, and how.
WITHHELD_SHOWN = {"disputed": "disputed", "edited": "changed outside Vetted", "overdue": "overdue for review"}


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
    # A pending proposal about the same record as this proposal, or about a record in these hints.
    same_target: bool = False
    # The two say alike things about different subjects (another client, another service).
    different_subject: bool = False
    withheld: str = ""  # why agents do not get this record now (WITHHELD_SHOWN), or ""
    title: str = ""  # the record's title as approved (never text changed outside Vetted)

    @property
    def label(self) -> str:
        return similarity_label(self.similarity) if self.similarity else ""

    @property
    def contradiction(self) -> bool:
        return bool(self.differs)

    @property
    def duplicate(self) -> bool:
        """One piece of knowledge with the proposal: "Reject as duplicate of" is offered."""
        return (
            self.similarity >= DUPLICATE_SIMILARITY
            and not self.differs
            and not self.different_subject
            and not self.withheld
        )

    @property
    def mergeable(self) -> bool:
        """A create may become a revision of this record: it is about the same
        thing (a contradiction included: the create may be its newer version)."""
        return (
            self.record is not None
            and self.similarity >= DUPLICATE_SIMILARITY
            and not self.different_subject
            and not self.withheld
        )

    @property
    def close(self) -> bool:
        return self.duplicate or self.mergeable

    @property
    def public_id(self) -> str:
        return self.record.public_id if self.record is not None else self.proposal.public_id  # type: ignore[union-attr]


@dataclass
class Hints:
    records: list[Match] = field(default_factory=list)
    pending: list[Match] = field(default_factory=list)

    # Pending proposals about the same record as this one (any action), or about a record above.
    same_record: list[Match] = field(default_factory=list)

    @property
    def contradictions(self) -> list[Match]:
        return [m for m in self.records + self.pending if m.contradiction]

    @property
    def duplicates(self) -> list[Match]:
        return [m for m in self.records + self.pending if m.duplicate]

    @property
    def flags(self) -> list[str]:
        """What a bulk confirm counts: "contradiction", "duplicate", "same record"."""
        found = []
        if self.contradictions:
            found.append("contradiction")
        if self.duplicates:
            found.append("duplicate")
        if self.same_record:
            found.append("same record")
        return found


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


def _matched(similarity: float, text: str, other: str, **kwargs) -> Match:
    found = compare_pair(text, other, similarity)
    return Match(similarity, differs=found.reasons, different_subject=found.different_subject, **kwargs)


def _same_record(proposal: Proposal, targets: list[int], deciding: list[str]) -> list[Proposal]:
    """Other pending proposals (any action) about ``targets``: a revision,
    a retirement and a dispute of one record each see the others."""
    if not targets:
        return []
    return list(
        Proposal.objects.filter(state=ProposalState.PENDING, target_id__in=targets)
        .filter(space_access.proposals_in(deciding))
        .exclude(pk=proposal.pk)
        .select_related("agent", "target")
        .order_by("created_at")[: 2 * PENDING_SHOWN]
    )


def for_proposal(proposal: Proposal, embedder: Embedder | None = None) -> Hints:
    """The hints for a pending proposal: for a create or a revise, similar
    records and proposals; for every proposal about a record, the other
    pending proposals about it. Raises what the index raises (VettedError,
    IndexModelMismatch): the view shows it in place of the hint."""
    readable, deciding = _viewer_spaces()
    if proposal.action not in (ProposalAction.CREATE, ProposalAction.REVISE) or not proposal.title:
        rivals = _same_record(proposal, [proposal.target_id] if proposal.target_id else [], deciding)
        return Hints(same_record=[Match(0.0, proposal=p, same_target=True) for p in rivals])
    text = _text(proposal.title, proposal.body)
    # The proposal's chunk vectors once, from the per-process cache of pending proposals'
    # vectors (keyed by its content checksum), not embedded again by each of the three look-ups below.
    embedder = embedder or get_embedder()
    vectors = pending_vectors.for_proposals([proposal], embedder)[proposal.pk]
    own_target = proposal.target.public_id if proposal.target is not None else ""
    found = similar_records(
        proposal.title,
        proposal.body,
        spaces=readable,
        tags=proposal.tags,
        threshold=FLOOR,
        limit=3 * RECORDS_SHOWN,
        exclude_ids=[own_target] if own_target else [],
        embedder=embedder,
        vectors=vectors,
        withheld=WITHHELD_SHOWN,
    )
    records = []
    for h in found:
        shown = h.record.approved_version() or {"title": h.record.public_id, "body": ""}
        reason = h.record.withhold_reason() or ""
        records.append(
            _matched(
                h.similarity,
                text,
                _text(shown["title"], shown["body"]),
                record=h.record,
                withheld=WITHHELD_SHOWN.get(reason, ""),
                title=shown["title"],
            )
        )
    # Contradictions first (they are what a glance must not miss), then the closest.
    records.sort(key=lambda m: (not m.contradiction, -m.similarity))
    records = records[:RECORDS_SHOWN]

    waiting = {
        h.proposal.pk: h
        for h in similar_pending(
            proposal.title,
            proposal.body,
            space=deciding,
            tags=proposal.tags,
            threshold=settings.VETTED_CONTRADICTION_SIMILARITY,
            limit=PENDING_SHOWN,
            exclude_ids=[proposal.public_id],
            embedder=embedder,
            vectors=vectors,
        )
    }
    # Pending proposals about this proposal's record, or about a record shown
    # above, however worded: two changes of one record compete for it.
    targets = [m.record.pk for m in records if m.record is not None]
    if proposal.target_id is not None:
        targets.append(proposal.target_id)
    rivals = _same_record(proposal, targets, deciding)
    same_target = {p.pk for p in rivals}
    texts = [p for p in rivals if p.action in (ProposalAction.CREATE, ProposalAction.REVISE) and p.title]
    missing = [p for p in texts if p.pk not in waiting]
    for hit in pending_similarities(
        proposal.title, proposal.body, missing, tags=proposal.tags, embedder=embedder, vectors=vectors
    ):
        waiting[hit.proposal.pk] = hit
    pending = [
        _matched(
            h.similarity,
            text,
            _text(h.proposal.title, h.proposal.body),
            proposal=h.proposal,
            same_target=h.proposal.pk in same_target,
        )
        for h in waiting.values()
    ]
    pending.sort(key=lambda m: (not m.same_target, not m.contradiction, -m.similarity))
    listed = {m.proposal.pk for m in pending if m.proposal is not None}
    others = [Match(0.0, proposal=p, same_target=True) for p in rivals if p.pk not in listed]
    return Hints(records=records, pending=pending[: PENDING_SHOWN + len(same_target)], same_record=others)


def flags_of(public_ids: list[str], embedder: Embedder | None = None) -> dict[str, list[str]]:
    """{public id: its flags (Hints.flags)} for the proposals a bulk accept
    would decide, so its confirm can say how many carry one and leave them
    out. A proposal whose hint cannot be computed (the index needs a
    rebuild) is flagged "hints unavailable": unseen is not the same as clear."""
    from retrieval.index import IndexModelMismatch
    from reviews.errors import VettedError

    embedder = embedder or get_embedder()
    proposals = Proposal.objects.filter(public_id__in=public_ids).select_related("target", "agent")
    flags: dict[str, list[str]] = {}
    for proposal in proposals:
        try:
            found = for_proposal(proposal, embedder=embedder).flags
        except (VettedError, IndexModelMismatch):
            found = ["hints unavailable"]
        if found:
            flags[proposal.public_id] = found
    return flags
