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
    rebuild of reviews_record drops them (see retrieval/engines/sqlite/ddl.py)."""
    from django.db import connections

    from .engines import retrieval_engine
    from .tables import DOCS, RECORD_TABLE

    connection = connections[using]
    tables = connection.introspection.table_names()
    if RECORD_TABLE not in tables or DOCS not in tables:
        return
    with connection.cursor() as cursor:
        retrieval_engine(cursor).ensure_partitions(cursor)  # the triggers, and the partitions of every space


def _space_saved(sender: object, instance: object, created: bool, using: str, **kwargs: object) -> None:
    """A new space gets its partitions in the transaction that made it
    (DDL is transactional on both engines: FTS5 tables on SQLite, partial
    GIN/trigram/HNSW indexes on PostgreSQL), before any record can be filed there."""
    if not created:
        return
    from django.db import connections

    from .engines import retrieval_engine
    from .tables import DOCS

    connection = connections[using]
    if DOCS not in connection.introspection.table_names():
        return  # a database still migrating: post_migrate makes them
    with connection.cursor() as cursor:
        retrieval_engine(cursor).ensure_partitions(cursor, [instance.slug])  # type: ignore[attr-defined]


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

    from . import approved_content

    approved_content.reconcile_now([instance.pk])
    transaction.on_commit(_embed_after_commit)


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self) -> None:
        from reviews.models import Record
        from reviews.space_models import Space

        post_migrate.connect(_ensure_triggers, sender=self, dispatch_uid="retrieval.triggers")
        post_save.connect(_record_changed, sender=Record, dispatch_uid="retrieval.record_saved")
        post_delete.connect(_record_changed, sender=Record, dispatch_uid="retrieval.record_deleted")
        post_save.connect(_space_saved, sender=Space, dispatch_uid="retrieval.space_saved")
