from django.db import migrations

# PostgreSQL (issue 17): the keyword tsvector folds diacritics (pg_schema.FOLD),
# as FTS5's remove_diacritics does on SQLite, and each document keeps its
# length in tokens (BM25, pg_fts.py). A database made before this gets the
# functions, its generated columns made anew (which drops the tsv column's
# GIN indexes) and those indexes again. SQLite needs nothing.


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from retrieval import pg_schema, schema

    with schema_editor.connection.cursor() as cursor:
        cursor.execute(pg_schema.FOLD_FUNCTION)
        cursor.execute(pg_schema.TOKENS_FUNCTION)
        cursor.execute(
            "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a "
            "ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = %s::regclass AND a.attname = 'tsv'",
            [schema.DOCS],
        )
        row = cursor.fetchone()
        if row is not None and pg_schema.FOLD in row[0]:
            return  # made by 0001 with the current layout
        cursor.execute(f"ALTER TABLE {schema.DOCS} DROP COLUMN IF EXISTS tsv, DROP COLUMN IF EXISTS tokens")
        cursor.execute(
            f"ALTER TABLE {schema.DOCS} ADD COLUMN {pg_schema.tsv_column()}, ADD COLUMN {pg_schema.tokens_column()}"
        )
        for scope in schema.current_scopes(cursor):
            for sql in pg_schema.partition_indexes(scope):
                cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0003_approved_content_per_space")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
