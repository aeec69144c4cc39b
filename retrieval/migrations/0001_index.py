from django.db import migrations


def forwards(apps, schema_editor):
    from retrieval.schema import create_all

    with schema_editor.connection.cursor() as cursor:
        create_all(cursor)


def backwards(apps, schema_editor):
    from retrieval.schema import DROP

    with schema_editor.connection.cursor() as cursor:
        for sql in DROP:
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0002_audit_append_only")]
    operations = [migrations.RunPython(forwards, backwards)]
