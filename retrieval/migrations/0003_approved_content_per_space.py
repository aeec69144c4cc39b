from django.db import migrations

# The first layout indexed each record's *current* text in one FTS pair over
# reviews_record, for every space and state at once. This one indexes only
# approved content, one partition per space and state (retrieval/schema.py).
# Raw SQL only: this runs before later migrations of reviews_record, so the
# Record model may not match the table yet.


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        return  # 0001 created the current layout on PostgreSQL (retrieval/pg_schema.py); this upgrades SQLite
    from retrieval import schema

    with schema_editor.connection.cursor() as cursor:
        for sql in schema.OLD_LAYOUT:
            cursor.execute(sql)
        cursor.execute(f"PRAGMA table_info({schema.CHUNKS})")
        if "scope" not in {row[1] for row in cursor.fetchall()}:
            cursor.execute(f"ALTER TABLE {schema.CHUNKS} ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
        cursor.execute(f"UPDATE {schema.CHUNKS} SET scope = coalesce((SELECT r.scope FROM {schema.RECORD_TABLE} r "
                       f"WHERE r.id = record_id), '')")
        # create_all queues every record; the first reconcile (on the next
        # search, sync or `serve`) checks each one's checksum and indexes the
        # approved ones. A record already edited out of band has no approved
        # text left to index: it stays out of the indexes (its chunks go at
        # the next sync).
        schema.create_all(cursor)
        cursor.execute(f"INSERT INTO {schema.DIRTY} (record_id) SELECT id FROM {schema.RECORD_TABLE} WHERE true "
                       "ON CONFLICT (record_id) DO UPDATE SET gen = gen + 1")
        # vec0 gets its partition (scope) and state columns. The vectors are
        # rebuilt from the copies in retrieval_chunk, so nothing is embedded
        # again; every row starts withheld until reconcile files its document.
        cursor.execute(f"SELECT value FROM {schema.META} WHERE key = 'dimension'")
        row = cursor.fetchone()
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [schema.VEC])
        if cursor.fetchone() is not None and row is not None:
            from retrieval.index import SCHEMA_VERSION, VEC_COLUMNS

            cursor.execute(f"DROP TABLE {schema.VEC}")
            cursor.execute(f"CREATE VIRTUAL TABLE {schema.VEC} USING vec0({VEC_COLUMNS.format(dimension=int(row[0]))})")
            cursor.execute(f"INSERT INTO {schema.VEC} (rowid, scope, held, embedding) SELECT id, scope, 1, embedding "
                           f"FROM {schema.CHUNKS} WHERE embedding IS NOT NULL AND length(embedding) = %s",
                           [4 * int(row[0])])
            cursor.execute(f"DELETE FROM {schema.CHUNKS} WHERE embedding IS NULL OR length(embedding) != %s",
                           [4 * int(row[0])])
            cursor.execute(f"UPDATE {schema.META} SET value = %s WHERE key = 'schema_version'", [SCHEMA_VERSION])
        else:
            cursor.execute(f"DROP TABLE IF EXISTS {schema.VEC}")
            cursor.execute(f"DELETE FROM {schema.CHUNKS}")
            cursor.execute(f"DELETE FROM {schema.META}")
        cursor.execute(f"DELETE FROM {schema.META} WHERE key LIKE 'vectors_%%'")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0002_chunk_embedding_copy")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
