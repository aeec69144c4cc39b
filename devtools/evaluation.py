"""What the evaluation commands share: the dev/test split, recall and rank
tables, and a dump of each query's candidates for studying the fusion.

The split is by a hash of each query's id, so it is the same on every
machine and run, does not move when queries are added, and is independent
of the order of the file: weights are chosen on ``dev`` and reported on
``test``, which nobody tuned on.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Iterable
from typing import IO, Any

from django.db import connection

from retrieval import tables
from retrieval.candidates import gather
from retrieval.embeddings import Embedder
from retrieval.query import query_identifiers, query_terms
from retrieval.scoring import DocFreq, features, reader_statistics

SPLITS = ("dev", "test", "all")


def split_of(query_id: str) -> str:
    """``dev`` or ``test``: half and half, by the first byte of the id's SHA-256."""
    return "dev" if hashlib.sha256(query_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def in_split(query_id: str, split: str) -> bool:
    return split == "all" or split_of(query_id) == split


def rank_table(ranks: dict[tuple[str, str], list[int | None]]) -> list[dict[str, Any]]:
    """hit@1, hit@8 and MRR per (mode, query type) from 1-based ranks (None: not in the top 8)."""
    table = []
    for (mode, qtype), values in sorted(ranks.items()):
        n = len(values)
        table.append(
            {
                "mode": mode,
                "type": qtype,
                "n": n,
                "hit@1": sum(1 for r in values if r == 1) / n,
                "hit@8": sum(1 for r in values if r is not None) / n,
                "mrr": statistics.fmean(1 / r if r else 0 for r in values),
            }
        )
    return table


def dump_candidates(
    out: IO[str],
    query_id: str,
    query: str,
    gold: Iterable[str],
    qtype: str,
    embedder: Embedder,
    public_ids: dict[int, str],
    k: int = 100,
) -> None:
    """One JSON line: the query, its gold record ids and every hybrid
    candidate (from the reader-of-everything's live pools) with the
    evidence the fusion reads, for studying fusions offline."""
    terms, identifiers = query_terms(query), query_identifiers(query)
    vector = embedder.embed_one(query)
    spaces = ["personal", "team", "system"]
    docfreq = DocFreq()
    with connection.cursor() as cursor:
        found, _more = gather(cursor, "hybrid", terms, identifiers, vector, k, spaces, tables.LIVE, docfreq, spaces)
        total, containing = reader_statistics(cursor, terms, docfreq, spaces)
    line = {
        "id": query_id,
        "type": qtype,
        "query": query,
        "gold": list(gold),
        "terms": terms,
        "identifiers": identifiers,
        "documents": total,
        "containing": containing,
        "candidates": [{"id": public_ids.get(rowid, str(rowid)), **features(c)} for rowid, c in found.items()],
    }
    out.write(json.dumps(line) + "\n")
