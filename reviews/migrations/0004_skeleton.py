from django.db import migrations, models


def fill_keys(apps, schema_editor):
    """Compute the look-alike keys of every existing record (of its approved
    copy when one is kept, else of its text) and proposal. A newer
    confusables.txt would need the same pass again."""
    from reviews import confusables

    Record = apps.get_model("reviews", "Record")
    Proposal = apps.get_model("reviews", "Proposal")
    # The database being migrated (`migrate --database X`), not the default one.
    records, proposals = Record.objects.using(schema_editor.connection.alias), \
        Proposal.objects.using(schema_editor.connection.alias)
    batch = []
    fields = ("kind", "scope", "title", "body", "tags")
    for record in records.only(*fields, "approved_content").iterator(chunk_size=500):
        copy = record.approved_content
        text = copy if isinstance(copy, dict) and all(name in copy for name in fields) else \
            {name: getattr(record, name) for name in fields}
        # content_key's argument is called space since 0011 renamed the column.
        record.skeleton_checksum = confusables.content_key(**{"space" if k == "scope" else k: v for k, v in text.items()})
        record.title_skeleton = confusables.title_key(text["title"])
        batch.append(record)
        if len(batch) >= 500:
            records.bulk_update(batch, ["skeleton_checksum", "title_skeleton"])
            batch = []
    records.bulk_update(batch, ["skeleton_checksum", "title_skeleton"])
    batch = []
    for proposal in (proposals.exclude(content_checksum="")
                     .only("kind", "scope", "title", "body", "tags").iterator(chunk_size=500)):
        proposal.skeleton_checksum = confusables.content_key(kind=proposal.kind, space=proposal.scope,
                                                            title=proposal.title, body=proposal.body,
                                                            tags=proposal.tags)
        batch.append(proposal)
        if len(batch) >= 500:
            proposals.bulk_update(batch, ["skeleton_checksum"])
            batch = []
    proposals.bulk_update(batch, ["skeleton_checksum"])


class Migration(migrations.Migration):
    """Look-alike keys (reviews/confusables.py), so a copy that differs only in
    look-alike or invisible characters is refused as a duplicate and the inbox
    can warn about look-alike titles, each by an index probe."""

    dependencies = [("reviews", "0003_record_approved_content")]

    operations = [
        migrations.AddField(
            model_name="proposal",
            name="skeleton_checksum",
            field=models.CharField(blank=True, db_index=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="record",
            name="skeleton_checksum",
            field=models.CharField(blank=True, db_index=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="record",
            name="title_skeleton",
            field=models.CharField(blank=True, db_index=True, editable=False, max_length=64),
        ),
        migrations.RunPython(fill_keys, migrations.RunPython.noop),
    ]
