from django.db import migrations

# The index's own tables call the space ``space``, as the records they index
# now do (reviews 0011). Each engine's SQL is its ``space_columns`` upgrade
# step (retrieval/engines/*/upgrades.py); going back undoes it.


def forwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    with schema_editor.connection.cursor() as cursor:
        retrieval_engine(schema_editor.connection).upgrade("space_columns", cursor)


def backwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    with schema_editor.connection.cursor() as cursor:
        retrieval_engine(schema_editor.connection).upgrade("space_columns_backwards", cursor)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0005_term_frequencies"), ("reviews", "0011_space_names")]
    operations = [migrations.RunPython(forwards, backwards)]
