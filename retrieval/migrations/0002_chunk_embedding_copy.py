from django.db import migrations


# SQLite: a copy of each chunk's vector beside its text (PostgreSQL's 0001 made it).
def forwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    with schema_editor.connection.cursor() as cursor:
        retrieval_engine(schema_editor.connection).upgrade("chunk_embedding_copy", cursor)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0001_index")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
