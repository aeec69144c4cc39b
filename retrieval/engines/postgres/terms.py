"""BM25's term frequencies on PostgreSQL: one row per document and
lexeme with its occurrences weighted by column, kept from retrieval_doc.tsv
by a trigger (ddl.TRIGGERS), read by keyword.py.

Why a table: BM25 needs each matching document's frequency of each query
term. Read from the tsv (unnest), that costs every lexeme and position of
every match, which made keyword search 3-5x slower than ts_rank at 10k
records; read from here, it costs the query lexemes' postings only.
Each row carries its document's partition (space, state), and the lookup
index leads with it, as the GIN indexes are per partition: a query's cost
depends on its reader's spaces only, never on what another space holds.
"""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from ...tables import DOCS

TERMS = "retrieval_doc_term"
# FTS5's column weights (sqlite/keyword.py _WEIGHTS) by tsvector weight label: title A, tags B, body D.
COLUMN_WEIGHT = "CASE w WHEN 'A' THEN 10 WHEN 'B' THEN 5 ELSE 1 END"

# wf: the lexeme's positions weighted by column (a whole number); tokens: the
# document's (retrieval_doc.tokens, BM25's |D|), so that a query reads this
# table's index alone and never the documents' rows.
TABLE = [
    f"""CREATE TABLE IF NOT EXISTS {TERMS} (
        doc_id bigint NOT NULL,
        space text NOT NULL,
        state text NOT NULL,
        lexeme text NOT NULL,
        wf integer NOT NULL,
        tokens integer NOT NULL,
        PRIMARY KEY (doc_id, lexeme))""",
    f"CREATE INDEX IF NOT EXISTS retrieval_doc_term_lookup ON {TERMS} (space, state, lexeme) "
    "INCLUDE (doc_id, wf, tokens)",
]


def _rows_of(row: str, source: str) -> str:
    """The term rows of documents ``row`` (NEW in the trigger, or an alias),
    one per lexeme: ``source`` must yield ``row`` and ``unnest(row.tsv) u``."""
    return (
        f"SELECT {row}.id, {row}.space, {row}.state, u.lexeme, "
        f"(SELECT coalesce(sum({COLUMN_WEIGHT}), 0) FROM unnest(u.weights) w)::integer, {row}.tokens FROM {source}"
    )


_EVERY_DOCUMENT = _rows_of("d", f"{DOCS} d CROSS JOIN LATERAL unnest(d.tsv) u")


_COLUMNS = f"INSERT INTO {TERMS} (doc_id, space, state, lexeme, wf, tokens)"

# Delete and insert on any change: a document's lexemes change together.
FUNCTION = f"""CREATE OR REPLACE FUNCTION retrieval_doc_terms() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            DELETE FROM {TERMS} WHERE doc_id = OLD.id;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            {_COLUMNS} {_rows_of("NEW", "unnest(NEW.tsv) u")};
        END IF;
        RETURN NULL;
    END $$"""

# Every document's rows made again (reindex, which drops the triggers; a database made before the table).
REBUILD = [
    f"DELETE FROM {TERMS}",
    f"{_COLUMNS} {_EVERY_DOCUMENT}",
]


def drift(cursor: CursorWrapper) -> int:
    """How many term rows differ from what the documents' tsv says (missing,
    extra or wrong), for check_index: 0 on a healthy index."""
    expected = _EVERY_DOCUMENT
    stored = f"SELECT doc_id, space, state, lexeme, wf, tokens FROM {TERMS}"
    cursor.execute(f"SELECT count(*) FROM (({expected}) EXCEPT ALL ({stored})) x")
    missing = int(cursor.fetchone()[0])
    cursor.execute(f"SELECT count(*) FROM (({stored}) EXCEPT ALL ({expected})) x")
    return missing + int(cursor.fetchone()[0])
