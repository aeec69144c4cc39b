from django.db import migrations

from reviews.audit_sql import CREATE_TRIGGERS, DROP_TRIGGERS


class Migration(migrations.Migration):
    """The write log refuses UPDATE and DELETE in SQL, whoever connects."""

    dependencies = [("reviews", "0001_initial")]

    operations = [
        migrations.RunSQL(sql=sql, reverse_sql=drop)
        for sql, drop in zip(CREATE_TRIGGERS, DROP_TRIGGERS, strict=True)
    ]
