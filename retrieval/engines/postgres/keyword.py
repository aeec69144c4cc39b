"""The keyword engine on PostgreSQL: sqlite/keyword.py's functions over the
weighted tsvector and trigram indexes of ddl.py. PostgresRetrieval dispatches
here for a PostgreSQL connection; the callers and the scoring are shared.

Scores: BM25 as FTS5 computes it (fts5_aux.c), in SQL over the tsvector,
so keyword ranking matches SQLite's: for each query term, idf (fts.bm25_idf
over the partition: its documents and those containing the term) times
f (k1 + 1) / (f + k1 (1 - b + b |D| / avgdl)), k1 = 1.2, b = 0.75, where f
is the term's occurrences weighted by column (title 10, tags 5, body 1:
tsvector weights A, B, D, kept per document and lexeme in terms.TERMS,
so a query reads its own lexemes' rows only), |D| the document's tokens
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
  state checked against the two names, the slug escaped by tables.literal),
  not bound as parameters: a partial index is used
  only when the planner can see that the query's WHERE implies the index's.
- LIKE patterns escape \\ % and _ (the identifier is matched literally).
"""

from __future__ import annotations

import threading
from typing import Any

from django.db.backends.utils import CursorWrapper

from ... import tables
from ...bm25 import bm25_idf
from .ddl import CONFIG, FOLD, IDENT_TEXT
from .terms import TERMS

K1, B = 1.2, 0.75  # FTS5's bm25() constants


def partition(space: str, state: str, table: str = "") -> str:
    """The WHERE clause of one partition, as literals (see the module's
    quirks), on the columns of ``table`` (an alias) if given."""
    if state not in tables.STATES:
        raise ValueError(f"unknown partition {space!r}/{state!r}")
    on = f"{table}." if table else ""
    return f"{on}space = '{tables.literal(space)}' AND {on}state = '{state}'"


def _query(term: str) -> tuple[str, list[str]]:
    # Folded as the documents are (ddl.FOLD), so "cafe" and "café" meet.
    return f"plainto_tsquery('{CONFIG}', {FOLD}(%s))", [term]


def document_count(cursor: CursorWrapper, space: str, state: str) -> int:
    cursor.execute(f"SELECT count(*) FROM {tables.DOCS} WHERE {partition(space, state)}")
    return int(cursor.fetchone()[0])


def document_frequency(cursor: CursorWrapper, space: str, state: str, term: str) -> int:
    query, params = _query(term)
    cursor.execute(f"SELECT count(*) FROM {tables.DOCS} WHERE {partition(space, state)} AND tsv @@ {query}", params)
    return int(cursor.fetchone()[0])


# (database, space, state) -> (the space's docs token, documents, mean tokens, {term: documents with it}).
# Each count is a round trip to the server (FTS5's are function calls), so
# they are kept until the space's ``docs:<space>`` token changes, which the
# triggers renew in the transaction of any change to its documents.
_counts: dict[tuple[str, str, str], tuple[str | None, int, float, dict[str, int]]] = {}
_counts_lock = threading.Lock()


def _statistics(
    cursor: CursorWrapper, space: str, state: str, terms: list[str]
) -> tuple[dict[str, float], float, bool]:
    """({term: BM25 idf}, mean document length, whether any document of the
    partition has any of the terms) of one partition."""
    cursor.execute(f"SELECT value FROM {tables.META} WHERE key = %s", [f"docs:{space}"])
    row = cursor.fetchone()
    token = row[0] if row else None
    key = (str(cursor.db.settings_dict["NAME"]), space, state)
    with _counts_lock:
        entry = _counts.get(key)
    if entry is None or entry[0] != token:
        cursor.execute(f"SELECT count(*), coalesce(avg(tokens), 0) FROM {tables.DOCS} WHERE {partition(space, state)}")
        total, mean = cursor.fetchone()
        entry = (token, int(total), float(mean), {})
    _token, total, mean, known = entry
    with _counts_lock:
        found = {term: known[term] for term in terms if term in known}
    missing = [term for term in terms if term not in found]
    if missing:
        found.update(_frequencies(cursor, space, state, missing))
    with _counts_lock:
        fresh = dict(known) if len(known) < 50_000 else {}
        fresh.update(found)
        _counts[key] = (token, total, mean, fresh)
    return {term: bm25_idf(total, found[term]) for term in terms}, mean, any(found[t] for t in terms)


def _lexemes(cursor: CursorWrapper, terms: list[str]) -> list[list[str]]:
    """Each term's lexemes as the query side makes them (one round trip).
    Not kept across calls: a process-wide cache of query terms would answer
    a term some other agent searched a little faster, which is a timing
    signal of another agent's queries."""
    cursor.execute(
        f"SELECT tsvector_to_array(to_tsvector('{CONFIG}', {FOLD}(t))) FROM unnest(%s::text[]) "
        "WITH ORDINALITY AS x(t, n) ORDER BY n",
        [list(terms)],
    )
    return [list(row[0]) for row in cursor.fetchall()]


def _per_document(
    cursor: CursorWrapper,
    where: tuple[str, str, list[int] | None],
    terms: list[str],
    mean: float | None = None,
) -> tuple[str, list[Any], list[str]]:
    """(a FROM item ``f``: one row per document of the partition ``where``
    (space, state, and the only documents wanted, or None) holding any
    lexeme of ``terms``, with each term's weighted frequency f0, f1, ...,
    as m0, m1, ... whether the document matches that term as
    ``tsv @@ plainto_tsquery(term)`` would (every lexeme of it: FTS5 matches
    a term's every token), and, given the partition's ``mean`` length,
    ``norm``, BM25's k1 (1 - b + b |D| / avgdl); its parameters; the SQL of
    each m<n>). Read from the term rows' index alone (terms.py).

    Engine quirks: constants are float8 parameters, since a bare 0.75 is
    numeric, whose arithmetic over tens of thousands of rows cost more than
    the aggregation; a one-lexeme term (nearly all) is an equality, not ANY.
    """
    space, state, only = where
    columns: list[str] = []
    params: list[Any] = []
    every: list[str] = []
    matches: list[str] = []
    for n, lexemes in enumerate(_lexemes(cursor, terms)):
        present = "t.lexeme = %s" if len(lexemes) == 1 else "t.lexeme = ANY(%s::text[])"
        value: Any = lexemes[0] if len(lexemes) == 1 else lexemes
        columns.append(f"coalesce(sum(t.wf) FILTER (WHERE {present}), 0)::float8 / {max(len(lexemes), 1)} AS f{n}")
        # A term of no lexemes (punctuation) matches nothing, as its empty tsquery does.
        columns.append(f"count(*) FILTER (WHERE {present}) = {len(lexemes)} AND {len(lexemes)} > 0 AS m{n}")
        params += [value, value]
        every += lexemes
        matches.append(f"f.m{n}")
    if mean is not None:
        columns.append("%s::float8 + %s::float8 * max(t.tokens) AS norm")
        params += [K1 * (1 - B), K1 * B / max(mean, 1e-9)]
    narrow = " AND t.doc_id = ANY(%s)" if only is not None else ""
    table = (
        f"(SELECT t.doc_id, {', '.join(columns)} FROM {TERMS} t "
        f"WHERE {partition(space, state, 't')} AND t.lexeme = ANY(%s::text[]){narrow} GROUP BY t.doc_id) f"
    )
    params.append(sorted(set(every)))
    if only is not None:
        params.append(list(only))
    return table, params, matches


def _frequencies(cursor: CursorWrapper, space: str, state: str, terms: list[str]) -> dict[str, int]:
    """{term: documents of the partition matching it}, in one round trip."""
    table, params, matches = _per_document(cursor, (space, state, None), terms)
    cursor.execute(f"SELECT {', '.join(f'count(*) FILTER (WHERE {m})' for m in matches)} FROM {table}", params)
    return {term: int(count) for term, count in zip(terms, cursor.fetchone(), strict=True)}


def _bm25(terms: list[str], idf: dict[str, float]) -> tuple[list[str], list[Any]]:
    """The per-term BM25 expressions over ``_per_document``'s ``f`` (given
    the mean), with their parameters. norm > 0 (k1 (1 - b) is), so a term
    a document lacks (f 0) scores 0 with no special case."""
    scores = [f"%s::float8 * f.f{n} / (f.f{n} + f.norm)" for n in range(len(terms))]
    return scores, [idf[term] * (K1 + 1) for term in terms]


def keyword_candidates(cursor: CursorWrapper, space: str, state: str, terms: list[str], k: int) -> dict[int, float]:
    if not terms:
        return {}
    idf, mean, any_found = _statistics(cursor, space, state, terms)
    if not any_found:  # no round trip for a partition none of the terms is in
        return {}
    lexemes = _lexemes(cursor, terms)
    if all(len(of_term) <= 1 for of_term in lexemes):
        return _single_lexeme_candidates(cursor, (space, state), lexemes, [idf[t] for t in terms], mean, k)
    return _any_candidates(cursor, (space, state), terms, idf, mean, k)


def _any_candidates(
    cursor: CursorWrapper, where: tuple[str, str], terms: list[str], idf: dict[str, float], mean: float, k: int
) -> dict[int, float]:
    """keyword_candidates for terms of any number of lexemes."""
    space, state = where
    table, table_params, matches = _per_document(cursor, (space, state, None), terms, mean)
    scores, score_params = _bm25(terms, idf)
    cursor.execute(
        f"SELECT f.doc_id, {' + '.join(scores)} AS s FROM {table} WHERE {' OR '.join(matches)} "
        "ORDER BY s DESC, f.doc_id LIMIT %s",
        [*score_params, *table_params, k],
    )
    return {rowid: float(score) for rowid, score in cursor.fetchall()}


def _single_lexeme_candidates(
    cursor: CursorWrapper,
    where: tuple[str, str],
    lexemes: list[list[str]],
    idfs: list[float],
    mean: float,
    k: int,
) -> dict[int, float]:
    """keyword_candidates when each term is one lexeme (or none), nearly
    always: then a document matches a term iff it has that lexeme's row, and
    a term's BM25 is a function of that one row, so each row is scored as it
    is read and summed per document, one aggregate instead of two per term
    (half the time at 100k records). A lexeme of two terms is joined twice
    and counts twice, as those terms' scores add up in the general form."""
    query = [(of_term[0], w * (K1 + 1)) for of_term, w in zip(lexemes, idfs, strict=True) if of_term]
    space, state = where
    cursor.execute(
        "SELECT t.doc_id, sum(q.w * t.wf / (t.wf + %s::float8 + %s::float8 * t.tokens)) AS s "
        f"FROM {TERMS} t JOIN unnest(%s::text[], %s::float8[]) AS q(lexeme, w) ON q.lexeme = t.lexeme "
        f"WHERE {partition(space, state, 't')} AND t.lexeme = ANY(%s::text[]) "
        "GROUP BY t.doc_id ORDER BY s DESC, t.doc_id LIMIT %s",
        [
            K1 * (1 - B),
            K1 * B / max(mean, 1e-9),
            [lexeme for lexeme, _ in query],
            [w for _, w in query],
            sorted({lexeme for lexeme, _ in query}),
            k,
        ],
    )
    return {rowid: float(score) for rowid, score in cursor.fetchall()}


def identifier_candidates(cursor: CursorWrapper, space: str, state: str, identifier: str, k: int) -> list[int]:
    pattern = identifier.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    cursor.execute(
        f"SELECT id FROM {tables.DOCS} WHERE {partition(space, state)} AND {IDENT_TEXT} LIKE %s ESCAPE '\\' "
        "ORDER BY id LIMIT %s",
        [f"%{pattern}%", k],
    )
    return [rowid for (rowid,) in cursor.fetchall()]


def term_scores(
    cursor: CursorWrapper, space: str, state: str, terms: list[str], candidate_ids: list[int]
) -> dict[int, dict[str, float]]:
    if not terms or not candidate_ids:
        return {}
    idf, mean, any_found = _statistics(cursor, space, state, terms)
    if not any_found:
        return {}
    table, table_params, _matches = _per_document(cursor, (space, state, list(candidate_ids)), terms, mean)
    scores, score_params = _bm25(terms, idf)
    cursor.execute(f"SELECT f.doc_id, {', '.join(scores)} FROM {table}", [*score_params, *table_params])
    found: dict[int, dict[str, float]] = {}
    for rowid, *values in cursor.fetchall():
        for term, value in zip(terms, values, strict=True):
            if value and value > 0:
                found.setdefault(rowid, {})[term] = float(value)
    return found
