from django.db import migrations


def forwards(apps, schema_editor):
    from retrieval.schema import create_all

    with schema_editor.connection.cursor() as cursor:
        if schema_editor.connection.vendor == "postgresql":
            from retrieval import pg_schema

            pg_schema.create_extensions(cursor)
        create_all(cursor)


def backwards(apps, schema_editor):
    from retrieval import pg_schema
    from retrieval.schema import DROP

    drop = pg_schema.DROP if schema_editor.connection.vendor == "postgresql" else DROP
    with schema_editor.connection.cursor() as cursor:
        for sql in drop:
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0002_audit_append_only")]
    operations = [migrations.RunPython(forwards, backwards)]
