from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        return  # 0001 created the current layout on PostgreSQL (retrieval/pg_schema.py); this upgrades SQLite
    with schema_editor.connection.cursor() as cursor:
        # A copy of each chunk's vector beside its text: vec0 point lookups by
        # rowid read whole 1024-vector blocks (8 ms for 64 rows at 10k
        # records), a plain table row is read in microseconds. Search needs
        # such lookups for keyword hits the nearest-neighbour query missed.
        # (0001 builds from retrieval/schema.py, which already has the column
        # on databases created after this change.)
        cursor.execute("PRAGMA table_info(retrieval_chunk)")
        if "embedding" not in {row[1] for row in cursor.fetchall()}:
            cursor.execute("ALTER TABLE retrieval_chunk ADD COLUMN embedding BLOB")
        # Existing chunks have no copy: drop them and the vectors so the next
        # sync re-embeds everything (meta is cleared, so the vec0 table is
        # created afresh with the configured model).
        cursor.execute("DELETE FROM retrieval_chunk")
        cursor.execute("DROP TABLE IF EXISTS retrieval_vec")
        cursor.execute("DELETE FROM retrieval_meta")
        cursor.execute("INSERT OR IGNORE INTO retrieval_dirty (record_id) SELECT id FROM reviews_record")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0001_index")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
