"""The keyword engine on PostgreSQL (issue 17): fts.py's functions over the
weighted tsvector and trigram indexes of pg_schema.py. fts.py dispatches
here for a PostgreSQL connection; the callers and the scoring are shared.

Scores. PostgreSQL has no BM25. A document's keyword score here is the sum,
over the query's terms it contains, of the term's BM25 idf in the
partition (fts.bm25_idf, the same formula as FTS5's) times ts_rank of that
one term (weights title 1.0, tags 0.5, body 0.1: FTS5's 10/5/1; length
normalisation 1, rank / (1 + log(length))). ``term_scores`` returns the same
per-term products, so scoring.keyword_evidence can divide out this
partition's idf and weigh in the reader's, exactly as it does with FTS5's.

Quirks, each where it matters:
- Every term goes through plainto_tsquery, which parses plain text: user
  text can never be read as tsquery operators (& | ! <-> :*).
- The partition (space, state) is written into the SQL as literals (the
  state checked against the two names, the slug escaped by schema.literal),
  not bound as parameters: a partial index is used
  only when the planner can see that the query's WHERE implies the index's.
- LIKE patterns escape \\ % and _ (the identifier is matched literally).
"""

from __future__ import annotations

import threading

from django.db.backends.utils import CursorWrapper

from . import schema
from .pg_schema import CONFIG, FOLD, IDENT_TEXT

WEIGHTS = "'{0.1, 0.2, 0.5, 1.0}'::float4[]"  # D (body), C (unused), B (tags), A (title)
NORMALISATION = 1


def partition(scope: str, state: str) -> str:
    """The WHERE clause of one partition, as literals (see the module's quirks)."""
    if state not in schema.STATES:
        raise ValueError(f"unknown partition {scope!r}/{state!r}")
    return f"scope = '{schema.literal(scope)}' AND state = '{state}'"


def _query(term: str) -> tuple[str, list[str]]:
    # Folded as the documents are (pg_schema.FOLD), so "cafe" and "café" meet.
    return f"plainto_tsquery('{CONFIG}', {FOLD}(%s))", [term]


def document_count(cursor: CursorWrapper, scope: str, state: str) -> int:
    cursor.execute(f"SELECT count(*) FROM {schema.DOCS} WHERE {partition(scope, state)}")
    return int(cursor.fetchone()[0])


def document_frequency(cursor: CursorWrapper, scope: str, state: str, term: str) -> int:
    query, params = _query(term)
    cursor.execute(f"SELECT count(*) FROM {schema.DOCS} WHERE {partition(scope, state)} AND tsv @@ {query}", params)
    return int(cursor.fetchone()[0])


# (database, scope, state) -> (the space's docs token, documents, {term: documents with it}).
# Each count is a round trip to the server (FTS5's are function calls), so
# they are kept until the space's ``docs:<scope>`` token changes, which the
# triggers renew in the transaction of any change to its documents.
_counts: dict[tuple[str, str, str], tuple[str | None, int, dict[str, int]]] = {}
_counts_lock = threading.Lock()


def _idfs(cursor: CursorWrapper, scope: str, state: str, terms: list[str]) -> dict[str, float]:
    from .fts import bm25_idf

    cursor.execute(f"SELECT value FROM {schema.META} WHERE key = %s", [f"docs:{scope}"])
    row = cursor.fetchone()
    token = row[0] if row else None
    key = (str(cursor.db.settings_dict["NAME"]), scope, state)
    with _counts_lock:
        entry = _counts.get(key)
    if entry is None or entry[0] != token:
        entry = (token, document_count(cursor, scope, state), {})
    _token, total, known = entry
    with _counts_lock:
        found = {term: known[term] for term in terms if term in known}
    for term in terms:
        if term not in found:
            found[term] = document_frequency(cursor, scope, state, term)
    with _counts_lock:
        fresh = dict(known) if len(known) < 50_000 else {}
        fresh.update(found)
        _counts[key] = (token, total, fresh)
    return {term: bm25_idf(total, found[term]) for term in terms}


def keyword_candidates(cursor: CursorWrapper, scope: str, state: str, terms: list[str], k: int) -> dict[int, float]:
    if not terms:
        return {}
    idf = _idfs(cursor, scope, state, terms)
    ranks: list[str] = []
    matches: list[str] = []
    params_rank: list[float | str] = []
    params_match: list[str] = []
    for term in terms:
        query, params = _query(term)
        ranks.append(f"%s * ts_rank({WEIGHTS}, tsv, {query}, {NORMALISATION})")
        params_rank += [idf[term], *params]
        matches.append(query)
        params_match += params
    cursor.execute(
        f"SELECT id, {' + '.join(ranks)} AS s FROM {schema.DOCS} WHERE {partition(scope, state)} "
        f"AND tsv @@ ({' || '.join(matches)}) ORDER BY s DESC, id LIMIT %s",
        [*params_rank, *params_match, k],
    )
    return {rowid: float(score) for rowid, score in cursor.fetchall()}


def identifier_candidates(cursor: CursorWrapper, scope: str, state: str, identifier: str, k: int) -> list[int]:
    pattern = identifier.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    cursor.execute(
        f"SELECT id FROM {schema.DOCS} WHERE {partition(scope, state)} AND {IDENT_TEXT} LIKE %s ESCAPE '\\' "
        "ORDER BY id LIMIT %s",
        [f"%{pattern}%", k],
    )
    return [rowid for (rowid,) in cursor.fetchall()]


def term_scores(
    cursor: CursorWrapper, scope: str, state: str, terms: list[str], candidate_ids: list[int]
) -> dict[int, dict[str, float]]:
    if not terms or not candidate_ids:
        return {}
    idf = _idfs(cursor, scope, state, terms)
    found: dict[int, dict[str, float]] = {}
    for term in terms:
        query, params = _query(term)
        cursor.execute(
            f"SELECT id, ts_rank({WEIGHTS}, tsv, {query}, {NORMALISATION}) FROM {schema.DOCS} "
            f"WHERE {partition(scope, state)} AND id = ANY(%s) AND tsv @@ {query}",
            [*params, list(candidate_ids), *params],
        )
        for rowid, rank in cursor.fetchall():
            found.setdefault(rowid, {})[term] = idf[term] * float(rank)
    return found
