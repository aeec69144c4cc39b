"""The keyword engine on PostgreSQL (issue 17): fts.py's functions over the
weighted tsvector and trigram indexes of pg_schema.py. fts.py dispatches
here for a PostgreSQL connection; the callers and the scoring are shared.

Scores: BM25 as FTS5 computes it (fts5_aux.c), in SQL over the tsvector,
so keyword ranking matches SQLite's: for each query term, idf (fts.bm25_idf
over the partition: its documents and those containing the term) times
f (k1 + 1) / (f + k1 (1 - b + b |D| / avgdl)), k1 = 1.2, b = 0.75, where f
is the term's occurrences weighted by column (title 10, tags 5, body 1:
tsvector weights A, B, D, read from unnest(tsv)), |D| the document's tokens
(the generated column ``tokens``) and avgdl the partition's mean of it.
Statistics are per partition (a space and a state), as FTS5's are per
table. ``term_scores`` returns the same per-term values, so
scoring.keyword_evidence can divide out this partition's idf and weigh in
the reader's, exactly as it does with FTS5's. (A term that parses into
several lexemes, "billing-api", counts their mean frequency, where FTS5
counts the phrase.)

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
from typing import Any

from django.db.backends.utils import CursorWrapper

from . import schema
from .pg_schema import CONFIG, FOLD, IDENT_TEXT

K1, B = 1.2, 0.75  # FTS5's bm25() constants
# FTS5's column weights (fts.py _WEIGHTS) by tsvector weight label.
COLUMN_WEIGHT = "CASE w WHEN 'A' THEN 10.0 WHEN 'B' THEN 5.0 ELSE 1.0 END"


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


# (database, scope, state) -> (the space's docs token, documents, mean tokens, {term: documents with it}).
# Each count is a round trip to the server (FTS5's are function calls), so
# they are kept until the space's ``docs:<scope>`` token changes, which the
# triggers renew in the transaction of any change to its documents.
_counts: dict[tuple[str, str, str], tuple[str | None, int, float, dict[str, int]]] = {}
_counts_lock = threading.Lock()


def _statistics(cursor: CursorWrapper, scope: str, state: str, terms: list[str]) -> tuple[dict[str, float], float]:
    """({term: BM25 idf}, mean document length) of one partition."""
    from .fts import bm25_idf

    cursor.execute(f"SELECT value FROM {schema.META} WHERE key = %s", [f"docs:{scope}"])
    row = cursor.fetchone()
    token = row[0] if row else None
    key = (str(cursor.db.settings_dict["NAME"]), scope, state)
    with _counts_lock:
        entry = _counts.get(key)
    if entry is None or entry[0] != token:
        cursor.execute(f"SELECT count(*), coalesce(avg(tokens), 0) FROM {schema.DOCS} WHERE {partition(scope, state)}")
        total, mean = cursor.fetchone()
        entry = (token, int(total), float(mean), {})
    _token, total, mean, known = entry
    with _counts_lock:
        found = {term: known[term] for term in terms if term in known}
    for term in terms:
        if term not in found:
            found[term] = document_frequency(cursor, scope, state, term)
    with _counts_lock:
        fresh = dict(known) if len(known) < 50_000 else {}
        fresh.update(found)
        _counts[key] = (token, total, mean, fresh)
    return {term: bm25_idf(total, found[term]) for term in terms}, mean


def _lexemes(cursor: CursorWrapper, terms: list[str]) -> list[list[str]]:
    """Each term's lexemes as the query side makes them (one round trip)."""
    cursor.execute(
        f"SELECT tsvector_to_array(to_tsvector('{CONFIG}', {FOLD}(t))) FROM unnest(%s::text[]) "
        "WITH ORDINALITY AS x(t, n) ORDER BY n",
        [list(terms)],
    )
    return [list(row[0]) for row in cursor.fetchall()]


def _bm25(
    cursor: CursorWrapper, terms: list[str], idf: dict[str, float], mean: float
) -> tuple[str, list[str], list[Any]]:
    """(the FROM-clause lateral that reads each term's weighted frequency f0,
    f1, ... from a row's tsv; the per-term BM25 expressions, for the SELECT
    list; the parameters in the order they appear in ``SELECT expressions
    FROM … lateral``: the expressions' first, then the lateral's)."""
    frequencies: list[str] = []
    lateral_params: list[Any] = []
    for n, lexemes in enumerate(_lexemes(cursor, terms)):
        frequencies.append(
            f"coalesce(sum({COLUMN_WEIGHT}) FILTER (WHERE u.lexeme = ANY(%s::text[])), 0)::float8 "
            f"/ {max(len(lexemes), 1)} AS f{n}"
        )
        lateral_params.append(lexemes)
    lateral = f"LATERAL (SELECT {', '.join(frequencies)} FROM unnest(d.tsv) u CROSS JOIN LATERAL unnest(u.weights) w) f"
    norm = f"{K1} * (1 - {B} + {B} * d.tokens / %s::float8)"
    scores: list[str] = []
    score_params: list[Any] = []
    for n, term in enumerate(terms):
        scores.append(f"coalesce(%s * f.f{n} * {K1 + 1} / nullif(f.f{n} + {norm}, 0), 0)")
        score_params += [idf[term], max(mean, 1e-9)]
    return lateral, scores, [*score_params, *lateral_params]


def keyword_candidates(cursor: CursorWrapper, scope: str, state: str, terms: list[str], k: int) -> dict[int, float]:
    if not terms:
        return {}
    idf, mean = _statistics(cursor, scope, state, terms)
    lateral, scores, params = _bm25(cursor, terms, idf, mean)
    matches: list[str] = []
    params_match: list[str] = []
    for term in terms:
        query, query_params = _query(term)
        matches.append(query)
        params_match += query_params
    cursor.execute(
        f"SELECT d.id, {' + '.join(scores)} AS s FROM {schema.DOCS} d, {lateral} WHERE {partition(scope, state)} "
        f"AND d.tsv @@ ({' || '.join(matches)}) ORDER BY s DESC, d.id LIMIT %s",
        [*params, *params_match, k],
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
    idf, mean = _statistics(cursor, scope, state, terms)
    lateral, scores, params = _bm25(cursor, terms, idf, mean)
    cursor.execute(
        f"SELECT d.id, {', '.join(scores)} FROM {schema.DOCS} d, {lateral} "
        f"WHERE {partition(scope, state)} AND d.id = ANY(%s)",
        [*params, list(candidate_ids)],
    )
    found: dict[int, dict[str, float]] = {}
    for rowid, *values in cursor.fetchall():
        for term, value in zip(terms, values, strict=True):
            if value and value > 0:
                found.setdefault(rowid, {})[term] = float(value)
    return found
