from django.db import migrations


# SQLite: approved content, one partition per space and state (PostgreSQL's 0001 made it).
def forwards(apps, schema_editor):
    from retrieval.engines import retrieval_engine

    with schema_editor.connection.cursor() as cursor:
        retrieval_engine(schema_editor.connection).upgrade("approved_content_per_space", cursor)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0002_chunk_embedding_copy")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
