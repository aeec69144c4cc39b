from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_audit_triggers(sender, using, **kwargs):
    """Re-create the append-only triggers after every migrate.

    SQLite's ALTER support is limited, so Django rebuilds a table (create new,
    copy, drop old, rename) for many schema changes, and dropping the old table
    drops its triggers. A later migration touching AuditEvent would otherwise
    silently make the write log editable again.
    """
    from django.db import connections

    from .audit_sql import AUDIT_TABLE, for_vendor

    connection = connections[using]
    if AUDIT_TABLE not in connection.introspection.table_names():
        return
    create, _drop = for_vendor(connection.vendor)
    with connection.cursor() as cursor:
        for sql in create:
            cursor.execute(sql)


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Records and reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        post_migrate.connect(_ensure_audit_triggers, sender=self, dispatch_uid="reviews.audit_triggers")
        from . import lockouts  # noqa: F401 - connects the lockout log line
