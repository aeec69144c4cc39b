from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save

if TYPE_CHECKING:
    from reviews.models import Record

log = logging.getLogger(__name__)


def _ensure_triggers(sender: object, using: str, **kwargs: object) -> None:
    """Re-create the index triggers after every migrate: a Django table
    rebuild of reviews_record drops them (see retrieval/schema.py)."""
    from django.db import connections

    from .engine import index_triggers
    from .schema import DOCS, RECORD_TABLE

    connection = connections[using]
    tables = connection.introspection.table_names()
    if RECORD_TABLE not in tables or DOCS not in tables:
        return
    with connection.cursor() as cursor:
        for sql in index_triggers(cursor).values():
            cursor.execute(sql)


def _embed_after_commit() -> None:
    """After a record changed and committed: embed its approved content now if
    the model is loaded (the daemon), so readers' searches find the vectors
    current and never pay for others' changes."""
    from . import embeddings, index

    try:
        embedder = embeddings.loaded_embedder()
        if embedder is not None:
            index.sync(embedder)
    except Exception:  # noqa: BLE001 - the write is committed; the next search catches up
        log.exception("could not bring the search vectors up to date after a write")


def _record_changed(sender: object, instance: Record, **kwargs: object) -> None:
    """A record was saved or deleted (through the ORM): file its approved
    content in the same transaction, so the index is never behind a write
    that went through the actions. Queryset updates and raw SQL send no
    signal; their queued records are reconciled by the next search."""
    from django.db import transaction

    from . import docs

    docs.reconcile_now([instance.pk])
    transaction.on_commit(_embed_after_commit)


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self) -> None:
        from reviews.models import Record

        post_migrate.connect(_ensure_triggers, sender=self, dispatch_uid="retrieval.triggers")
        post_save.connect(_record_changed, sender=Record, dispatch_uid="retrieval.record_saved")
        post_delete.connect(_record_changed, sender=Record, dispatch_uid="retrieval.record_deleted")
