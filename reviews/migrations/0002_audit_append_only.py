from django.db import migrations

from dbengine import database_engine


def forwards(apps, schema_editor):
    create, _drop = database_engine(schema_editor.connection).audit_triggers()
    # A cursor without parameters: the PostgreSQL function's '%' is no placeholder.
    with schema_editor.connection.cursor() as cursor:
        for sql in create:
            cursor.execute(sql)


def backwards(apps, schema_editor):
    _create, drop = database_engine(schema_editor.connection).audit_triggers()
    with schema_editor.connection.cursor() as cursor:
        for sql in drop:
            cursor.execute(sql)


class Migration(migrations.Migration):
    """The write log refuses UPDATE and DELETE in SQL, whoever connects
    (SQLite: RAISE(ABORT) triggers; PostgreSQL: plpgsql triggers, also on TRUNCATE)."""

    dependencies = [("reviews", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
