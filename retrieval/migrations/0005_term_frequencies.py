from django.db import migrations


# PostgreSQL: BM25's term frequencies in a table of their own (SQLite: FTS5 keeps its own).
def forwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    with schema_editor.connection.cursor() as cursor:
        retrieval_engine(schema_editor.connection).upgrade("term_frequencies", cursor)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0004_fold_diacritics_and_lengths")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
