from django.db import migrations

# PostgreSQL (issue 17): BM25's term frequencies get a table of their own,
# kept by a trigger (retrieval/pg_terms.py says why), instead of being read
# from every matching row's tsvector at query time. A database made before
# this gets the table, its function and triggers, and its rows from the
# documents already indexed. SQLite needs nothing (FTS5 keeps its own).


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from retrieval import pg_schema, pg_terms

    with schema_editor.connection.cursor() as cursor:
        for sql in pg_terms.TABLE:
            cursor.execute(sql)
        pg_schema.ensure_partitions(cursor)  # the function and the triggers
        for sql in pg_terms.REBUILD:
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0004_fold_diacritics_and_lengths")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
