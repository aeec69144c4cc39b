from django.db import migrations

from reviews.audit_sql import for_vendor


def forwards(apps, schema_editor):
    create, _drop = for_vendor(schema_editor.connection.vendor)
    # A cursor without parameters: the PostgreSQL function's '%' is no placeholder.
    with schema_editor.connection.cursor() as cursor:
        for sql in create:
            cursor.execute(sql)


def backwards(apps, schema_editor):
    _create, drop = for_vendor(schema_editor.connection.vendor)
    with schema_editor.connection.cursor() as cursor:
        for sql in drop:
            cursor.execute(sql)


class Migration(migrations.Migration):
    """The write log refuses UPDATE and DELETE in SQL, whoever connects
    (SQLite: RAISE(ABORT) triggers; PostgreSQL: plpgsql triggers, also on TRUNCATE)."""

    dependencies = [("reviews", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
