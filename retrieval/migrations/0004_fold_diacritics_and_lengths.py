from django.db import migrations


# PostgreSQL: the tsvector folds diacritics; documents keep their length (SQLite needs nothing).
def forwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    with schema_editor.connection.cursor() as cursor:
        retrieval_engine(schema_editor.connection).upgrade("fold_diacritics_and_lengths", cursor)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0003_approved_content_per_space")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
