"""SQLite's tables for retrieval: the approved-content table, FTS5 keyword
indexes per space, chunk table, queues, meta, and the triggers that keep them.

What is indexed is the *approved* content of each record, never the current
row: ``retrieval_doc`` holds, per record, the text, kind and space that its
approval checksum covers (copied by index.reconcile() only after checking
that checksum). A record edited out of band keeps its last approved text here
and is marked ``edited``; text nobody approved is never indexed anywhere, so
no score, count or candidate can depend on it.

Every document is in exactly one partition: its (approved) space, and its
state, ``live`` (deliverable as of the last reconcile) or ``held`` (withheld:
retired, superseded, disputed, edited, overdue, outside its validity window).
Each partition has its own keyword tables, so a query reads only the spaces
its reader may read, and the deliverable ones apart from the withheld ones:
- retrieval_fts_<space>_<state>: porter-stemmed words (title/body/tags weighted
  in ranking); FTS5's BM25 statistics are therefore those of the deliverable
  records of one space (scoring.py re-weights them to the reader's spaces);
- retrieval_ident_<space>_<state>: trigram, for exact identifiers
  (acme/billing-api, ACME-1234, 21.0.3, STRIPE_WEBHOOK_SECRET).
They are FTS5 *external content* tables over one view per partition
(FTS5 quirk: an external-content table's 'integrity-check' compares the
index with every row of its content table, so each needs a content table of
exactly its own rows: a view does that without a copy of the text).

Sync is done by the database where it can be: triggers on reviews_record
queue changed records (retrieval_queue); triggers on retrieval_doc keep the
keyword tables in step with it and queue vector work (retrieval_dirty). Only
the checksum check itself needs Python (SQLite has no SHA-256), which is why
reconcile() sits between the two. The vec0 table is created by the indexer,
because its dimension depends on the embedding model (recorded in
retrieval_meta).

Django rebuilds a table (create, copy, drop, rename) for many ALTERs on
SQLite, which drops its triggers; post_migrate re-creates them (apps.py).

"""

from collections.abc import Iterable

from django.db.backends.utils import CursorWrapper

from ...tables import (
    BASE_SPACES,
    CHUNKS,
    DIRTY,
    DOCS,
    META,
    QUEUE,
    RECORD_TABLE,
    VEC,
    WATCHED,
    fts,
    ident,
    index_waits,
    literal,
    partitions,
    record_triggers_wait,
    view,
    wanted_spaces,
)
from ...tables import PARTITIONS as PARTITIONS

# sqlite-vec's table: one row per chunk; the space is its partition key and
# ``held`` a metadata column, both filtered inside the KNN.
VEC_COLUMNS = "space text partition key, held integer, embedding float[{dimension}] distance_metric=cosine"


def keyword_tables(spaces: Iterable[str]) -> list[str]:
    return [table for space, state in partitions(spaces) for table in (fts(space, state), ident(space, state))]


KEYWORD_TABLES = keyword_tables(BASE_SPACES)


_TOKENIZERS = {fts: "porter unicode61 remove_diacritics 2", ident: "trigram case_sensitive 0"}

TABLES = [
    f"CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {QUEUE} (record_id INTEGER PRIMARY KEY)",
    f"""CREATE TABLE IF NOT EXISTS {DOCS} (
        id INTEGER PRIMARY KEY,
        space TEXT NOT NULL,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        tags TEXT NOT NULL,
        checksum TEXT NOT NULL,
        edited INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL)""",
    f"CREATE INDEX IF NOT EXISTS retrieval_doc_partition ON {DOCS} (space, state)",
    # AUTOINCREMENT: chunk ids are vec0 rowids and must never be reused, or a
    # stale vector could attach to a new chunk.
    f"""CREATE TABLE IF NOT EXISTS {CHUNKS} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        record_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        text_hash TEXT NOT NULL,
        text TEXT NOT NULL,
        embedding BLOB,
        space TEXT NOT NULL DEFAULT '',
        UNIQUE (record_id, seq))""",
    f"CREATE TABLE IF NOT EXISTS {DIRTY} (record_id INTEGER PRIMARY KEY, gen INTEGER NOT NULL DEFAULT 1)",
]


def partition_tables(space: str) -> list[str]:
    """The view and keyword tables of one space's two partitions."""
    sql = []
    for _space, state in partitions([space]):
        sql.append(
            f"CREATE VIEW IF NOT EXISTS {view(space, state)} AS SELECT id, title, body, tags FROM {DOCS} "
            f"WHERE space = '{literal(space)}' AND state = '{state}'"
        )
        for name, tokenizer in _TOKENIZERS.items():
            sql.append(f"""CREATE VIRTUAL TABLE IF NOT EXISTS {name(space, state)} USING fts5(
            title, body, tags, content='{view(space, state)}', content_rowid='id', tokenize='{tokenizer}')""")
    return sql


for _space in BASE_SPACES:
    TABLES.extend(partition_tables(_space))


# --------------------------------------------------------------------------- triggers

_ENQUEUE = f"INSERT INTO {QUEUE} (record_id) VALUES ({{row}}.id) ON CONFLICT (record_id) DO NOTHING;"


def _token(name: str, row: str) -> str:
    # A random token per space, renewed in the transaction that changed it:
    # caches of per-space statistics and vector masks compare it, so a change
    # in one space never makes another space's caches reload.
    return (
        f"INSERT INTO {META} (key, value) VALUES ('{name}:' || {row}.space, hex(randomblob(8))) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value;"
    )


def _keyword_insert(row: str, spaces: Iterable[str]) -> str:
    parts = []
    for space, state in partitions(spaces):
        for table in (fts(space, state), ident(space, state)):
            parts.append(
                f"INSERT INTO {table} (rowid, title, body, tags) SELECT {row}.id, {row}.title, {row}.body, "
                f"{row}.tags WHERE {row}.space = '{literal(space)}' AND {row}.state = '{state}';"
            )
    return " ".join(parts)


def _keyword_delete(row: str, spaces: Iterable[str]) -> str:
    # External content: the old values must be given to remove their tokens.
    parts = []
    for space, state in partitions(spaces):
        for table in (fts(space, state), ident(space, state)):
            parts.append(
                f"INSERT INTO {table} ({table}, rowid, title, body, tags) SELECT 'delete', {row}.id, "
                f"{row}.title, {row}.body, {row}.tags WHERE {row}.space = '{literal(space)}' "
                f"AND {row}.state = '{state}';"
            )
    return " ".join(parts)


_VECTOR_WORK = f"""INSERT INTO {DIRTY} (record_id, gen) SELECT {{row}}.id, 1 WHERE {{cond}}
        ON CONFLICT (record_id) DO UPDATE SET gen = gen + 1;"""


def triggers(spaces: Iterable[str]) -> dict[str, str]:
    """The index triggers; those on retrieval_doc name every partition of ``spaces``."""
    spaces = list(spaces)
    return {
        "retrieval_record_ai": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_ai AFTER INSERT ON {RECORD_TABLE} BEGIN
            {_ENQUEUE.format(row="new")}
        END""",
        "retrieval_record_ad": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_ad AFTER DELETE ON {RECORD_TABLE} BEGIN
            {_ENQUEUE.format(row="old")}
        END""",
        # Counter bumps and provenance edits leave the index alone.
        "retrieval_record_au": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_au
            AFTER UPDATE OF {", ".join(WATCHED)}
            ON {RECORD_TABLE} WHEN {" OR ".join(f"old.{c} IS NOT new.{c}" for c in WATCHED)} BEGIN
            {_ENQUEUE.format(row="new")}
        END""",
        "retrieval_doc_ai": f"""CREATE TRIGGER IF NOT EXISTS retrieval_doc_ai AFTER INSERT ON {DOCS} BEGIN
            {_keyword_insert("new", spaces)} {_VECTOR_WORK.format(row="new", cond="true")} {_token("docs", "new")}
        END""",
        "retrieval_doc_ad": f"""CREATE TRIGGER IF NOT EXISTS retrieval_doc_ad AFTER DELETE ON {DOCS} BEGIN
            {_keyword_delete("old", spaces)} {_VECTOR_WORK.format(row="old", cond="true")} {_token("docs", "old")}
        END""",
        # The flags (edited) alone change nothing indexed; state and text move
        # the document between or within partitions. Only text and space changes
        # are vector work: a state change keeps the chunks (index.reconcile
        # updates vec0's state column itself, as vec0 may not exist yet).
        "retrieval_doc_au": f"""CREATE TRIGGER IF NOT EXISTS retrieval_doc_au
            AFTER UPDATE OF space, state, title, body, tags ON {
            DOCS
        } WHEN old.space IS NOT new.space OR old.state IS NOT new.state OR old.title IS NOT new.title
            OR old.body IS NOT new.body OR old.tags IS NOT new.tags BEGIN
            {_keyword_delete("old", spaces)} {_keyword_insert("new", spaces)}
            {
            _VECTOR_WORK.format(
                row="new",
                cond="old.space IS NOT new.space OR old.title IS NOT new.title OR "
                "old.body IS NOT new.body OR old.tags IS NOT new.tags",
            )
        }
            {_token("docs", "old")} {_token("docs", "new")}
        END""",
    }


# The triggers of a database with only the three base spaces.
TRIGGERS = triggers(BASE_SPACES)
DOC_TRIGGERS = ("retrieval_doc_ai", "retrieval_doc_ad", "retrieval_doc_au")

# Names of tables and triggers of the first index layout (one FTS pair over
# reviews_record itself, which indexed the current text): migration 0003
# drops them.
OLD_LAYOUT = [
    "DROP TRIGGER IF EXISTS retrieval_record_ai",
    "DROP TRIGGER IF EXISTS retrieval_record_ad",
    "DROP TRIGGER IF EXISTS retrieval_record_au",
    "DROP TABLE IF EXISTS retrieval_fts_vocab",
    "DROP TABLE IF EXISTS retrieval_fts",
    "DROP TABLE IF EXISTS retrieval_fts_ident",
]

DROP_KEYWORD = (
    [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS]
    + [f"DROP TABLE IF EXISTS {table}" for table in KEYWORD_TABLES]
    + [f"DROP VIEW IF EXISTS {view(space, state)}" for space, state in PARTITIONS]
)

DROP = DROP_KEYWORD + [f"DROP TABLE IF EXISTS {name}" for name in (DOCS, QUEUE, VEC, CHUNKS, DIRTY, META)]


def drop_keyword(spaces: Iterable[str]) -> list[str]:
    spaces = list(spaces)
    return (
        [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS]
        + [f"DROP TABLE IF EXISTS {table}" for table in keyword_tables(spaces)]
        + [f"DROP VIEW IF EXISTS {view(space, state)}" for space, state in partitions(spaces)]
    )


def ensure_partitions(cursor: CursorWrapper, spaces: Iterable[str] | None = None) -> list[str]:
    """Make the partitions of every current space (or of ``spaces`` besides)
    and the triggers that feed them; idempotent. Returns the spaces."""
    wanted = wanted_spaces(cursor, spaces)
    if index_waits(cursor):
        return wanted
    for space in wanted:
        for sql in partition_tables(space):
            cursor.execute(sql)
    made = triggers(wanted)
    if record_triggers_wait(cursor):
        made = {name: sql for name, sql in made.items() if not name.startswith("retrieval_record_")}
    for name in DOC_TRIGGERS:  # re-made, so that they name every partition
        cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
    for sql in made.values():
        cursor.execute(sql)
    return wanted


def create_all(cursor: CursorWrapper) -> None:
    for sql in TABLES:
        cursor.execute(sql)
    ensure_partitions(cursor)
    # Whatever records already exist (an upgrade of a populated database) are
    # reconciled into the index on first use.
    cursor.execute(f"INSERT OR IGNORE INTO {QUEUE} (record_id) SELECT id FROM {RECORD_TABLE}")
