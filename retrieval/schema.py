"""The SQL that retrieval owns: keyword indexes, chunk table, sync queue, meta.

Keyword indexes are FTS5 *external content* tables over reviews_record, kept
in sync by triggers, so no Python code path can forget a sync:
- retrieval_fts: porter-stemmed words (title/body/tags weighted in ranking);
- retrieval_fts_ident: trigram, for exact identifiers (acme/billing-api,
  ACME-1234, 21.0.3, STRIPE_WEBHOOK_SECRET) and substrings of them.
Vectors cannot be computed in SQL, so the same triggers put the record id in
retrieval_dirty; the indexer drains that queue (retrieval/index.py). The
vec0 table itself is created by the indexer, because its dimension depends on
the embedding model (recorded in retrieval_meta).

Django rebuilds a table (create, copy, drop, rename) for many ALTERs on
SQLite, which drops its triggers; post_migrate re-creates them (apps.py).
"""

RECORD_TABLE = "reviews_record"
FTS = "retrieval_fts"
FTS_IDENT = "retrieval_fts_ident"
FTS_VOCAB = "retrieval_fts_vocab"
CHUNKS = "retrieval_chunk"
DIRTY = "retrieval_dirty"
META = "retrieval_meta"
VEC = "retrieval_vec"

TABLES = [
    f"CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # AUTOINCREMENT: chunk ids are vec0 rowids and must never be reused, or a
    # stale vector could attach to a new chunk.
    f"""CREATE TABLE IF NOT EXISTS {CHUNKS} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        record_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        text_hash TEXT NOT NULL,
        text TEXT NOT NULL,
        embedding BLOB,
        UNIQUE (record_id, seq))""",
    f"CREATE TABLE IF NOT EXISTS {DIRTY} (record_id INTEGER PRIMARY KEY, gen INTEGER NOT NULL DEFAULT 1)",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS} USING fts5(
        title, body, tags, content='{RECORD_TABLE}', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_IDENT} USING fts5(
        title, body, tags, content='{RECORD_TABLE}', content_rowid='id',
        tokenize='trigram case_sensitive 0')""",
    # Per-term document counts, for idf-weighted query coverage.
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_VOCAB} USING fts5vocab({FTS}, 'row')",
]

_QUEUE = f"""INSERT INTO {DIRTY} (record_id, gen) VALUES ({{row}}.id, 1)
        ON CONFLICT (record_id) DO UPDATE SET gen = gen + 1;"""


def _fts_insert(table: str) -> str:
    return f"INSERT INTO {table} (rowid, title, body, tags) VALUES (new.id, new.title, new.body, new.tags);"


def _fts_delete(table: str) -> str:
    # External content: the old values must be given to remove their tokens.
    return (f"INSERT INTO {table} ({table}, rowid, title, body, tags) "
            f"VALUES ('delete', old.id, old.title, old.body, old.tags);")


TRIGGERS = {
    "retrieval_record_ai": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_ai AFTER INSERT ON {RECORD_TABLE} BEGIN
        {_fts_insert(FTS)} {_fts_insert(FTS_IDENT)} {_QUEUE.format(row="new")}
    END""",
    "retrieval_record_ad": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_ad AFTER DELETE ON {RECORD_TABLE} BEGIN
        {_fts_delete(FTS)} {_fts_delete(FTS_IDENT)} {_QUEUE.format(row="old")}
    END""",
    # Only text changes matter; status and counter updates leave the index alone.
    "retrieval_record_au": f"""CREATE TRIGGER IF NOT EXISTS retrieval_record_au AFTER UPDATE OF title, body, tags ON {RECORD_TABLE}
        WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.tags IS NOT new.tags BEGIN
        {_fts_delete(FTS)} {_fts_delete(FTS_IDENT)} {_fts_insert(FTS)} {_fts_insert(FTS_IDENT)} {_QUEUE.format(row="new")}
    END""",
}

DROP = [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS] + [
    f"DROP TABLE IF EXISTS {FTS_VOCAB}", f"DROP TABLE IF EXISTS {FTS}", f"DROP TABLE IF EXISTS {FTS_IDENT}",
    f"DROP TABLE IF EXISTS {VEC}", f"DROP TABLE IF EXISTS {CHUNKS}", f"DROP TABLE IF EXISTS {DIRTY}",
    f"DROP TABLE IF EXISTS {META}",
]


def create_all(cursor) -> None:
    for sql in TABLES:
        cursor.execute(sql)
    for sql in TRIGGERS.values():
        cursor.execute(sql)
    # Index whatever records already exist (an upgrade of a populated database).
    cursor.execute(f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')")
    cursor.execute(f"INSERT INTO {FTS_IDENT}({FTS_IDENT}) VALUES ('rebuild')")
    cursor.execute(f"INSERT OR IGNORE INTO {DIRTY} (record_id) SELECT id FROM {RECORD_TABLE}")
