"""The keyword engine on SQLite FTS5: every keyword query search makes.

Each function reads one partition (a space and a state, see tables.py), so
a reader's queries never touch a space it may not read, and deliverable
documents are ranked apart from withheld ones. PostgreSQL's keyword.py
provides these same functions over its own tables; nothing outside this
module writes FTS5 syntax (SQLiteRetrieval calls them).

FTS5 quirks relied on here, each where it matters:
- bm25() is lower-is-better (negated below) and takes one weight per column;
  its statistics (document count, average length, document frequency) are
  those of the one table it ranks, hence one table per partition.
- A quoted string in MATCH is a phrase: user text cannot inject operators.
- `rowid IN (...)` next to MATCH makes FTS5 evaluate the MATCH once per row
  (10x slower); a join with a temp table of integer primary keys walks the
  term's doclist once and probes the candidates by key instead.
- Trigram MATCH of a quoted string is a case-insensitive substring search
  and needs at least three characters.
"""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from ... import tables
from ...query import fts_or_query, fts_string

# Column weights for bm25: title 10, body 1, tags 5.
_WEIGHTS = "10.0, 1.0, 5.0"


def keyword_candidates(cursor: CursorWrapper, space: str, state: str, terms: list[str], k: int) -> dict[int, float]:
    """The ``k`` best BM25 matches of any of ``terms`` in one partition {rowid: bm25}."""
    if not terms:
        return {}
    table = tables.fts(space, state)
    cursor.execute(
        f"SELECT rowid, -bm25({table}, {_WEIGHTS}) AS s FROM {table} WHERE {table} MATCH %s ORDER BY s DESC LIMIT %s",
        [fts_or_query(terms), k],
    )
    return {rowid: score for rowid, score in cursor.fetchall()}


def identifier_candidates(cursor: CursorWrapper, space: str, state: str, identifier: str, k: int) -> list[int]:
    """Up to ``k`` documents of one partition containing ``identifier`` as a
    substring (whole-token checking is the caller's, on the approved text)."""
    table = tables.ident(space, state)
    cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s LIMIT %s", [fts_string(identifier), k])
    return [rowid for (rowid,) in cursor.fetchall()]


def document_count(cursor: CursorWrapper, space: str, state: str = tables.LIVE) -> int:
    """Documents in one partition (the N of its idf)."""
    cursor.execute(f"SELECT count(*) FROM {tables.DOCS} WHERE space = %s AND state = %s", [space, state])
    return int(cursor.fetchone()[0])


def document_frequency(cursor: CursorWrapper, space: str, state: str, term: str) -> int:
    """Documents of one partition that contain ``term`` (stemmed as indexed)."""
    table = tables.fts(space, state)
    cursor.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH %s", [fts_string(term)])
    return int(cursor.fetchone()[0])


def term_scores(
    cursor: CursorWrapper, space: str, state: str, terms: list[str], candidate_ids: list[int]
) -> dict[int, dict[str, float]]:
    """For each of ``candidate_ids`` (documents of this partition), each of
    ``terms`` it contains with that term's own BM25 contribution in this
    partition: {rowid: {term: bm25 of the one-term query}}. (FTS5 quirk: a
    one-phrase bm25() is idf(term) times the term's length-normalised
    frequency, so dividing by this partition's idf leaves a frequency that
    other statistics can weight; see scoring.keyword_evidence.)"""
    if not terms or not candidate_ids:
        return {}
    cursor.execute("CREATE TEMP TABLE IF NOT EXISTS retrieval_candidates (id INTEGER PRIMARY KEY)")
    cursor.execute("DELETE FROM temp.retrieval_candidates")
    cursor.executemany("INSERT INTO temp.retrieval_candidates (id) VALUES (%s)", [(rowid,) for rowid in candidate_ids])
    table = tables.fts(space, state)
    found: dict[int, dict[str, float]] = {}
    for term in terms:
        cursor.execute(
            f"SELECT f.rowid, -bm25({table}, {_WEIGHTS}) FROM {table} f JOIN temp.retrieval_candidates c "
            f"ON c.id = f.rowid WHERE {table} MATCH %s",
            [fts_string(term)],
        )
        for rowid, score in cursor.fetchall():
            found.setdefault(rowid, {})[term] = score
    return found
