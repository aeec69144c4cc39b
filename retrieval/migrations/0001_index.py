from django.db import migrations


def forwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    engine = retrieval_engine(schema_editor.connection)
    with schema_editor.connection.cursor() as cursor:
        engine.prepare_database(cursor)
        engine.create_all(cursor)


def backwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    with schema_editor.connection.cursor() as cursor:
        for sql in retrieval_engine(schema_editor.connection).drop_all():
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0002_audit_append_only")]
    operations = [migrations.RunPython(forwards, backwards)]
