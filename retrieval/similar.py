"""Records close in meaning to a piece of text: the near-duplicate check for
agent proposals (and the "similar records" hint in the inbox).

Similarity is the cosine between the embedded chunks of the new text and the
indexed chunks of existing records, taking the best pair per record; a
record is a near duplicate when that best pair is above the threshold.
Only records a reader may receive right now (through the gate) and in the
given spaces count: a retired or overdue record is not a reason to refuse
new knowledge, and records in other spaces do not exist for the caller. The
nearest chunks are drawn from the deliverable documents of those spaces only
(candidates.nearest_chunks), so nothing else takes their places.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection

from reviews.models import Agent, Proposal, ProposalAction, ProposalState, Record
from reviews.space_access import space_slugs

from . import approved_content, index, tables
from .candidates import nearest_chunks
from .embeddings import Embedder, get_embedder
from .gate import withhold_reason

# Chunks fetched per chunk of the new text; plenty for a handful of hits.
_K = 64


@dataclass(frozen=True)
class Similar:
    record: Record
    similarity: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.record.public_id,
            "title": self.record.title,
            "kind": self.record.kind,
            "space": self.record.space,
            "similarity": round(self.similarity, 3),
        }


def similar_records(
    title: str,
    body: str,
    *,
    spaces: Iterable[str],
    tags: list[str] | None = None,
    threshold: float = 0.0,
    limit: int = 5,
    exclude_ids: Iterable[str] = (),
    embedder: Embedder | None = None,
    vectors: np.ndarray | None = None,
    withheld: Iterable[str] = (),
) -> list[Similar]:
    """Deliverable records in ``spaces`` whose best chunk pair with this text
    has cosine similarity >= ``threshold``, most similar first. ``vectors``:
    the text's chunk vectors when the caller has them (embedded otherwise).
    ``withheld``: withhold reasons (e.g. "disputed", "edited") that still
    count: the reviewer's hint names a disputed or changed record too, an
    agent's near-duplicate check never does (the default)."""
    embedder = embedder or get_embedder()
    spaces = [s for s in space_slugs() if s in set(spaces)]
    approved_content.reconcile(sweep_spaces=spaces)
    index.sync(embedder)  # a record approved a moment ago must count
    if vectors is None:
        vectors = embedder.embed(index.chunk_texts(title, body, tags))
    allowed = set(withheld)
    states = (tables.LIVE, tables.HELD) if allowed else (tables.LIVE,)
    best: dict[int, float] = {}
    with connection.cursor() as cursor:
        for vector in vectors:
            for space in spaces:
                for state in states:
                    found, _ = nearest_chunks(cursor, vector, _K, space, state)
                    for record_id, (similarity, _chunk) in found.items():
                        if similarity >= threshold and similarity > best.get(record_id, -1.0):
                            best[record_id] = similarity
    if not best:
        return []
    excluded = set(exclude_ids)
    records = Record.objects.filter(pk__in=list(best), space__in=spaces).exclude(public_id__in=excluded)
    hits = [Similar(r, best[r.pk]) for r in records if withhold_reason(r) is None or withhold_reason(r) in allowed]
    hits.sort(key=lambda h: (-h.similarity, h.record.public_id))
    return hits[:limit]


@dataclass(frozen=True)
class SimilarPending:
    proposal: Proposal
    similarity: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.proposal.public_id,
            "title": self.proposal.title,
            "kind": self.proposal.kind,
            "space": self.proposal.space,
            "similarity": round(self.similarity, 3),
            "pending": True,
        }


class _PendingVectors:
    """Chunk vectors of pending create/revise proposals, kept per process and
    keyed by (proposal, content checksum): pending proposals are not in the
    index, and embedding all of them on every proposal would cost seconds.
    Entries of proposals no longer pending are dropped as they are seen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vectors: dict[tuple[int, str, str], np.ndarray] = {}

    def for_proposals(self, proposals: list[Proposal], embedder: Embedder) -> dict[int, np.ndarray]:
        keys = {p.pk: (p.pk, p.content_checksum, embedder.name) for p in proposals}
        with self._lock:
            missing = [p for p in proposals if keys[p.pk] not in self._vectors]
        if missing:
            texts, owners = [], []
            for proposal in missing:
                for text in index.chunk_texts(proposal.title, proposal.body, proposal.tags):
                    texts.append(text)
                    owners.append(proposal.pk)
            vectors = embedder.embed(texts)
            grouped: dict[int, list[np.ndarray]] = {}
            for owner, vector in zip(owners, vectors, strict=True):
                grouped.setdefault(owner, []).append(vector)
            with self._lock:
                for proposal in missing:
                    self._vectors[keys[proposal.pk]] = np.asarray(grouped[proposal.pk], dtype=np.float32)
        with self._lock:
            wanted = set(keys.values())
            if len(self._vectors) > 2 * len(wanted) + 1000:  # forget decided proposals
                self._vectors = {k: v for k, v in self._vectors.items() if k in wanted}
            return {pk: self._vectors[key] for pk, key in keys.items()}


pending_vectors = _PendingVectors()


def similar_pending(
    title: str,
    body: str,
    *,
    space: str | Iterable[str],
    tags: list[str] | None = None,
    threshold: float = 0.0,
    limit: int = 5,
    exclude_checksum: str | None = None,
    agent: Agent | None = None,
    exclude_ids: Iterable[str] = (),
    embedder: Embedder | None = None,
    vectors: np.ndarray | None = None,
) -> list[SimilarPending]:
    """Pending create/revise proposals in ``space`` whose best chunk pair with
    this text has cosine similarity >= ``threshold``, most similar first.
    ``space``: one space, or several (the reviewer's hint looks in all).
    With ``agent``, only that agent's own proposals: an agent may be told
    about its own pending proposals, never about another agent's."""
    embedder = embedder or get_embedder()
    spaces = [space] if isinstance(space, str) else list(space)
    candidates = Proposal.objects.filter(
        state=ProposalState.PENDING, space__in=spaces, action__in=[ProposalAction.CREATE, ProposalAction.REVISE]
    )
    if agent is not None:
        candidates = candidates.filter(agent=agent)
    pending = list(
        candidates.exclude(content_checksum=exclude_checksum or "")
        .exclude(public_id__in=list(exclude_ids))
        .order_by("pk")
    )
    hits = [
        h
        for h in pending_similarities(title, body, pending, tags=tags, embedder=embedder, vectors=vectors)
        if h.similarity >= threshold
    ]
    return hits[:limit]


def pending_similarities(
    title: str,
    body: str,
    proposals: list[Proposal],
    *,
    tags: list[str] | None = None,
    embedder: Embedder | None = None,
    vectors: np.ndarray | None = None,
) -> list[SimilarPending]:
    """How similar this text is to each of ``proposals`` (pending creates or
    revises the caller chose), most similar first: the best chunk pair's cosine.
    ``vectors``: the text's chunk vectors when the caller has them."""
    if not proposals:
        return []
    embedder = embedder or get_embedder()
    new = vectors if vectors is not None else embedder.embed(index.chunk_texts(title, body, tags))
    new = np.asarray(new, dtype=np.float32)
    stored = pending_vectors.for_proposals(proposals, embedder)
    hits = [SimilarPending(p, float((stored[p.pk] @ new.T).max())) for p in proposals]
    hits.sort(key=lambda h: (-h.similarity, h.proposal.public_id))
    return hits
