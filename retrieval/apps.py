from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_triggers(sender, using, **kwargs):
    """Re-create the index triggers after every migrate: a Django table
    rebuild of reviews_record drops them (see retrieval/schema.py)."""
    from django.db import connections

    from .schema import FTS, RECORD_TABLE, TRIGGERS

    connection = connections[using]
    tables = connection.introspection.table_names()
    if RECORD_TABLE not in tables or FTS not in tables:
        return
    with connection.cursor() as cursor:
        for sql in TRIGGERS.values():
            cursor.execute(sql)


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self):
        post_migrate.connect(_ensure_triggers, sender=self, dispatch_uid="retrieval.triggers")
