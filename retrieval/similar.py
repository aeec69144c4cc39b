"""Records close in meaning to a piece of text: the near-duplicate check for
agent proposals (and the "similar records" hint in the inbox).

Similarity is the cosine between the embedded chunks of the new text and the
indexed chunks of existing records, taking the best pair per record; a
record is a near duplicate when that best pair is above the threshold.
Only records a reader may receive right now (through the gate) and in the
given scopes count: a retired or overdue record is not a reason to refuse
new knowledge, and records in other scopes do not exist for the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from reviews.models import Record

from . import index
from .embeddings import Embedder, get_embedder
from .gate import withhold_reason
from .search import nearest_chunks

# Chunks fetched per chunk of the new text; plenty for a handful of hits.
_K = 64


@dataclass(frozen=True)
class Similar:
    record: Record
    similarity: float

    def as_dict(self) -> dict:
        return {"id": self.record.public_id, "title": self.record.title, "kind": self.record.kind,
                "scope": self.record.scope, "similarity": round(self.similarity, 3)}


def similar_records(title: str, body: str, *, scopes, tags: list[str] | None = None, threshold: float = 0.0,
                    limit: int = 5, exclude_ids=(), embedder: Embedder | None = None) -> list[Similar]:
    """Deliverable records in ``scopes`` whose best chunk pair with this text
    has cosine similarity >= ``threshold``, most similar first."""
    embedder = embedder or get_embedder()
    index.sync(embedder)  # a record approved a moment ago must count
    vectors = embedder.embed(index.chunk_texts(title, body, tags))
    best: dict[int, float] = {}
    with connection.cursor() as cursor:
        for vector in vectors:
            found, _ = nearest_chunks(cursor, vector, _K)
            for record_id, (similarity, _chunk) in found.items():
                if similarity >= threshold and similarity > best.get(record_id, -1.0):
                    best[record_id] = similarity
    if not best:
        return []
    scopes, excluded = set(scopes), set(exclude_ids)
    records = Record.objects.filter(pk__in=list(best), scope__in=scopes).exclude(public_id__in=excluded)
    hits = [Similar(r, best[r.pk]) for r in records if withhold_reason(r) is None]
    hits.sort(key=lambda h: (-h.similarity, h.record.public_id))
    return hits[:limit]
