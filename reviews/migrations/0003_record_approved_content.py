"""Keep each record's approved content, not only its checksum.

Backfill: a record whose text still matches its checksum gets a copy of that
text. A record already edited since approval gets null: the approved text is
gone and cannot be recovered from a hash, so every path treats it as "no
approved copy" (it cannot be restored; a reviewer approves the current text
or retires it). Rows are updated with QuerySet.update on approved_content
only, so updated_at and the search index triggers (title, body, tags) are
left alone.
"""

from django.db import migrations, models

from reviews.checksum import CHECKSUM_FIELDS, approved_copy

BATCH = 500


def _columns(Record) -> tuple:
    """The model's names of the checksummed fields: this migration's model
    says scope, as the column did when it was written (0011 renamed it to
    space); today's model (a test's) says space. The copy gets today's keys,
    which 0011 then leaves as they are."""
    names = {field.name for field in Record._meta.get_fields()}
    return tuple("scope" if name == "space" and name not in names else name for name in CHECKSUM_FIELDS)


def backfill_approved_content(Record, using: str = "default") -> dict:
    """Fill approved_content for every row where it is null, in database
    ``using``. Returns counts {"kept": n, "lost": n} (lost: edited since
    approval, left null)."""
    counts = {"kept": 0, "lost": 0}
    records = Record.objects.using(using)
    rows = records.filter(approved_content__isnull=True).order_by("pk") \
        .values_list("pk", "approved_checksum", *_columns(Record))
    last = 0
    while True:
        batch = list(rows.filter(pk__gt=last)[:BATCH])
        if not batch:
            return counts
        for pk, approved_checksum, *values in batch:
            copy = approved_copy(dict(zip(CHECKSUM_FIELDS, values, strict=True)), approved_checksum)
            if copy is None:
                counts["lost"] += 1
            else:
                records.filter(pk=pk).update(approved_content=copy)
                counts["kept"] += 1
        last = batch[-1][0]


def forwards(apps, schema_editor):
    # The database being migrated (`migrate --database X`), not the default one.
    backfill_approved_content(apps.get_model("reviews", "Record"), using=schema_editor.connection.alias)


class Migration(migrations.Migration):

    dependencies = [
        ("reviews", "0002_audit_append_only"),
    ]

    operations = [
        migrations.AddField(
            model_name="record",
            name="approved_content",
            field=models.JSONField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
