"""The space is called ``space`` in the database too (it was ``scope``):
Record.space, Proposal.space, Agent.spaces, the (space, status) index, and
the key of each record's kept ``approved_content`` and of a proposal's
``reviewer_changes``. The checksum's canonical form is not touched (its key
stays "scope": reviews/checksum.py), so every stored checksum still holds.
AuditEvent rows are append-only and keep the keys they were written with
(reviews/legacy_events.py reads both).

Runs after retrieval's earlier migrations (which read reviews_record.scope);
retrieval 0006 renames the index's own columns after this.
"""

from django.db import migrations, models

_JSON_KEYS = (("Record", "approved_content"), ("Proposal", "reviewer_changes"))


def _rename_keys(apps, schema_editor, old: str, new: str) -> None:
    db = schema_editor.connection.alias
    for model_name, field in _JSON_KEYS:
        model = apps.get_model("reviews", model_name)
        for row in model.objects.using(db).filter(**{f"{field}__has_key": old}).only("pk", field).iterator():
            value = getattr(row, field)
            if not isinstance(value, dict) or new in value:
                continue
            model.objects.using(db).filter(pk=row.pk).update(
                **{field: {new if key == old else key: item for key, item in value.items()}}
            )


def forwards(apps, schema_editor):
    _rename_keys(apps, schema_editor, "scope", "space")


def backwards(apps, schema_editor):
    _rename_keys(apps, schema_editor, "space", "scope")


def drop_index_trigger_on_postgres(apps, schema_editor):
    """As in 0008: PostgreSQL refuses to rename a column a trigger names, and
    retrieval's retrieval_record_au watches it; SQLite needs nothing. It is
    made again by post_migrate (retrieval/apps.py)."""
    from dbengine import database_engine

    database_engine(schema_editor.connection).before_column_change(
        schema_editor, "reviews_record", "retrieval_record_au"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0010_invitation_revoked"),
        ("retrieval", "0005_term_frequencies"),
    ]

    operations = [
        migrations.RunPython(drop_index_trigger_on_postgres, drop_index_trigger_on_postgres),
        # The index goes before its column is renamed and comes back after,
        # so that each step (and its reverse) names columns that exist.
        migrations.RemoveIndex(model_name="record", name="reviews_rec_scope_80150b_idx"),
        migrations.RenameField(model_name="agent", old_name="scopes", new_name="spaces"),
        migrations.RenameField(model_name="record", old_name="scope", new_name="space"),
        migrations.RenameField(model_name="proposal", old_name="scope", new_name="space"),
        migrations.AddIndex(
            model_name="record", index=models.Index(fields=["space", "status"], name="reviews_rec_space_b2991e_idx")
        ),
        migrations.RunPython(forwards, backwards),
    ]
