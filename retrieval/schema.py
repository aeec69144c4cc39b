"""The SQL that retrieval owns: the approved-content table, keyword indexes per
space, chunk table, queues, meta.

What is indexed is the *approved* content of each record, never the current
row: ``retrieval_doc`` holds, per record, the text, kind and scope that its
approval checksum covers (copied by index.reconcile() only after checking
that checksum). A record edited out of band keeps its last approved text here
and is marked ``edited``; text nobody approved is never indexed anywhere, so
no score, count or candidate can depend on it.

Every document is in exactly one partition: its (approved) scope, and its
state, ``live`` (deliverable as of the last reconcile) or ``held`` (withheld:
retired, superseded, disputed, edited, overdue, outside its validity window).
Each partition has its own keyword tables, so a query reads only the spaces
its reader may read, and the deliverable ones apart from the withheld ones:
- retrieval_fts_<scope>_<state>: porter-stemmed words (title/body/tags weighted
  in ranking); FTS5's BM25 statistics are therefore those of the deliverable
  records of one space (scoring.py re-weights them to the reader's spaces);
- retrieval_ident_<scope>_<state>: trigram, for exact identifiers
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

On PostgreSQL the same tables are created by pg_schema.py (issue 17).
"""

import hashlib
import re
from collections.abc import Iterable

from django.db.backends.utils import CursorWrapper

from reviews.models import SCOPES

RECORD_TABLE = "reviews_record"
DOCS = "retrieval_doc"
QUEUE = "retrieval_queue"
CHUNKS = "retrieval_chunk"
DIRTY = "retrieval_dirty"
META = "retrieval_meta"
VEC = "retrieval_vec"

LIVE, HELD = "live", "held"
STATES = (LIVE, HELD)


# Spaces (issue 16): every space has its own partitions, named by
# ``partition_key``: the slug itself when it is a plain word (the three spaces
# every database has keep the table names they always had), else a digest of
# it (slugs such as ``personal:alice`` or ``north-rail`` are not SQL names).
# A space's tables are made when the space is (apps.py) and by create_all.
BASE_SCOPES = tuple(SCOPES)
_PLAIN = re.compile(r"[a-z0-9]+")


def partition_key(scope: str) -> str:
    if _PLAIN.fullmatch(scope):
        return scope
    return "x_" + hashlib.sha256(scope.encode("utf-8")).hexdigest()[:16]


def literal(scope: str) -> str:
    """A space's slug inside a SQL string literal (partition SQL names its
    space as a literal, so that triggers and partial indexes can use it)."""
    return scope.replace("'", "''")


def view(scope: str, state: str) -> str:
    return f"retrieval_doc_{partition_key(scope)}_{state}"


def fts(scope: str, state: str) -> str:
    """The porter-stemmed keyword table of one partition."""
    return f"retrieval_fts_{partition_key(scope)}_{state}"


def ident(scope: str, state: str) -> str:
    """The trigram (identifier) table of one partition."""
    return f"retrieval_ident_{partition_key(scope)}_{state}"


def partitions(scopes: Iterable[str]) -> list[tuple[str, str]]:
    return [(scope, state) for scope in scopes for state in STATES]


def keyword_tables(scopes: Iterable[str]) -> list[str]:
    return [table for scope, state in partitions(scopes) for table in (fts(scope, state), ident(scope, state))]


# The partitions every database has (the fixed scopes before spaces).
PARTITIONS = partitions(BASE_SCOPES)
KEYWORD_TABLES = keyword_tables(BASE_SCOPES)

_TOKENIZERS = {fts: "porter unicode61 remove_diacritics 2", ident: "trigram case_sensitive 0"}

TABLES = [
    f"CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {QUEUE} (record_id INTEGER PRIMARY KEY)",
    f"""CREATE TABLE IF NOT EXISTS {DOCS} (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        tags TEXT NOT NULL,
        checksum TEXT NOT NULL,
        edited INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL)""",
    f"CREATE INDEX IF NOT EXISTS retrieval_doc_partition ON {DOCS} (scope, state)",
    # AUTOINCREMENT: chunk ids are vec0 rowids and must never be reused, or a
    # stale vector could attach to a new chunk.
    f"""CREATE TABLE IF NOT EXISTS {CHUNKS} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        record_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        text_hash TEXT NOT NULL,
        text TEXT NOT NULL,
        embedding BLOB,
        scope TEXT NOT NULL DEFAULT '',
        UNIQUE (record_id, seq))""",
    f"CREATE TABLE IF NOT EXISTS {DIRTY} (record_id INTEGER PRIMARY KEY, gen INTEGER NOT NULL DEFAULT 1)",
]


def partition_tables(scope: str) -> list[str]:
    """The view and keyword tables of one space's two partitions."""
    sql = []
    for _scope, state in partitions([scope]):
        sql.append(
            f"CREATE VIEW IF NOT EXISTS {view(scope, state)} AS SELECT id, title, body, tags FROM {DOCS} "
            f"WHERE scope = '{literal(scope)}' AND state = '{state}'"
        )
        for name, tokenizer in _TOKENIZERS.items():
            sql.append(f"""CREATE VIRTUAL TABLE IF NOT EXISTS {name(scope, state)} USING fts5(
            title, body, tags, content='{view(scope, state)}', content_rowid='id', tokenize='{tokenizer}')""")
    return sql


for _scope in BASE_SCOPES:
    TABLES.extend(partition_tables(_scope))


# --------------------------------------------------------------------------- triggers

_ENQUEUE = f"INSERT INTO {QUEUE} (record_id) VALUES ({{row}}.id) ON CONFLICT (record_id) DO NOTHING;"
# What reconcile() reads: the approved text and everything "deliverable" depends on.
_WATCHED = (
    "title",
    "body",
    "tags",
    "kind",
    "scope",
    "status",
    "review_by",
    "valid_from",
    "valid_until",
    "approved_checksum",
)


def _token(name: str, row: str) -> str:
    # A random token per space, renewed in the transaction that changed it:
    # caches of per-space statistics and vector masks compare it, so a change
    # in one space never makes another space's caches reload.
    return (
        f"INSERT INTO {META} (key, value) VALUES ('{name}:' || {row}.scope, hex(randomblob(8))) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value;"
    )


def _keyword_insert(row: str, scopes: Iterable[str]) -> str:
    parts = []
    for scope, state in partitions(scopes):
        for table in (fts(scope, state), ident(scope, state)):
            parts.append(
                f"INSERT INTO {table} (rowid, title, body, tags) SELECT {row}.id, {row}.title, {row}.body, "
                f"{row}.tags WHERE {row}.scope = '{literal(scope)}' AND {row}.state = '{state}';"
            )
    return " ".join(parts)


def _keyword_delete(row: str, scopes: Iterable[str]) -> str:
    # External content: the old values must be given to remove their tokens.
    parts = []
    for scope, state in partitions(scopes):
        for table in (fts(scope, state), ident(scope, state)):
            parts.append(
                f"INSERT INTO {table} ({table}, rowid, title, body, tags) SELECT 'delete', {row}.id, "
                f"{row}.title, {row}.body, {row}.tags WHERE {row}.scope = '{literal(scope)}' "
                f"AND {row}.state = '{state}';"
            )
    return " ".join(parts)


_VECTOR_WORK = f"""INSERT INTO {DIRTY} (record_id, gen) SELECT {{row}}.id, 1 WHERE {{cond}}
        ON CONFLICT (record_id) DO UPDATE SET gen = gen + 1;"""


def triggers(scopes: Iterable[str]) -> dict[str, str]:
    """The index triggers; those on retrieval_doc name every partition of ``scopes``."""
    scopes = list(scopes)
    return {
        "retrieval_record_ai": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_ai AFTER INSERT ON {RECORD_TABLE} BEGIN
            {_ENQUEUE.format(row="new")}
        END""",
        "retrieval_record_ad": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_ad AFTER DELETE ON {RECORD_TABLE} BEGIN
            {_ENQUEUE.format(row="old")}
        END""",
        # Counter bumps and provenance edits leave the index alone.
        "retrieval_record_au": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_au
            AFTER UPDATE OF {", ".join(_WATCHED)}
            ON {RECORD_TABLE} WHEN {" OR ".join(f"old.{c} IS NOT new.{c}" for c in _WATCHED)} BEGIN
            {_ENQUEUE.format(row="new")}
        END""",
        "retrieval_doc_ai": f"""CREATE TRIGGER IF NOT EXISTS retrieval_doc_ai AFTER INSERT ON {DOCS} BEGIN
            {_keyword_insert("new", scopes)} {_VECTOR_WORK.format(row="new", cond="true")} {_token("docs", "new")}
        END""",
        "retrieval_doc_ad": f"""CREATE TRIGGER IF NOT EXISTS retrieval_doc_ad AFTER DELETE ON {DOCS} BEGIN
            {_keyword_delete("old", scopes)} {_VECTOR_WORK.format(row="old", cond="true")} {_token("docs", "old")}
        END""",
        # The flags (edited) alone change nothing indexed; state and text move
        # the document between or within partitions. Only text and scope changes
        # are vector work: a state change keeps the chunks (index.reconcile
        # updates vec0's state column itself, as vec0 may not exist yet).
        "retrieval_doc_au": f"""CREATE TRIGGER IF NOT EXISTS retrieval_doc_au
            AFTER UPDATE OF scope, state, title, body, tags ON {
            DOCS
        } WHEN old.scope IS NOT new.scope OR old.state IS NOT new.state OR old.title IS NOT new.title
            OR old.body IS NOT new.body OR old.tags IS NOT new.tags BEGIN
            {_keyword_delete("old", scopes)} {_keyword_insert("new", scopes)}
            {
            _VECTOR_WORK.format(
                row="new",
                cond="old.scope IS NOT new.scope OR old.title IS NOT new.title OR "
                "old.body IS NOT new.body OR old.tags IS NOT new.tags",
            )
        }
            {_token("docs", "old")} {_token("docs", "new")}
        END""",
    }


# The triggers of a database with only the three base spaces.
TRIGGERS = triggers(BASE_SCOPES)
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
    + [f"DROP VIEW IF EXISTS {view(scope, state)}" for scope, state in PARTITIONS]
)

DROP = DROP_KEYWORD + [f"DROP TABLE IF EXISTS {name}" for name in (DOCS, QUEUE, VEC, CHUNKS, DIRTY, META)]


def drop_keyword(scopes: Iterable[str]) -> list[str]:
    scopes = list(scopes)
    return (
        [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS]
        + [f"DROP TABLE IF EXISTS {table}" for table in keyword_tables(scopes)]
        + [f"DROP VIEW IF EXISTS {view(scope, state)}" for scope, state in partitions(scopes)]
    )


def current_scopes(cursor: CursorWrapper) -> list[str]:
    """Every space that has or may get documents: the base three, every
    space in reviews_space, and any scope already filed in retrieval_doc."""
    found = set(BASE_SCOPES)
    tables = set(cursor.db.introspection.table_names(cursor)) & {"reviews_space", DOCS}
    if "reviews_space" in tables:
        cursor.execute("SELECT slug FROM reviews_space")
        found |= {row[0] for row in cursor.fetchall()}
    if DOCS in tables:
        cursor.execute(f"SELECT DISTINCT scope FROM {DOCS}")
        found |= {row[0] for row in cursor.fetchall()}
    return [*BASE_SCOPES, *sorted(found - set(BASE_SCOPES))]


def wanted_scopes(cursor: CursorWrapper, scopes: Iterable[str] | None = None) -> list[str]:
    """Every current space, and ``scopes`` besides (a space being made)."""
    wanted = current_scopes(cursor)
    return wanted + [s for s in scopes or () if s not in wanted]


def ensure_partitions(cursor: CursorWrapper, scopes: Iterable[str] | None = None) -> list[str]:
    """Make the partitions of every current space (or of ``scopes`` besides)
    and the triggers that feed them; idempotent. Returns the scopes."""
    wanted = wanted_scopes(cursor, scopes)
    for scope in wanted:
        for sql in partition_tables(scope):
            cursor.execute(sql)
    made = triggers(wanted)
    for name in DOC_TRIGGERS:  # re-made, so that they name every partition
        cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
    for sql in made.values():
        cursor.execute(sql)
    return wanted


def create_all(cursor: CursorWrapper) -> None:
    if cursor.db.vendor == "postgresql":  # the same tables in PostgreSQL's terms (issue 17)
        from . import pg_schema

        pg_schema.create_all(cursor)
        return
    for sql in TABLES:
        cursor.execute(sql)
    ensure_partitions(cursor)
    # Whatever records already exist (an upgrade of a populated database) are
    # reconciled into the index on first use.
    cursor.execute(f"INSERT OR IGNORE INTO {QUEUE} (record_id) SELECT id FROM {RECORD_TABLE}")
