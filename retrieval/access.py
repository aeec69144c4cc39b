"""Access counts of delivered records, batched so searches do not each take
the write lock."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from django.db import DatabaseError, connection, transaction

from dbengine import database_engine

from . import tables

log = logging.getLogger(__name__)


class AccessCounter:
    """Batches access-count increments; flushed every ``flush_every`` seconds."""

    def __init__(self, flush_every: float = 2.0):
        self._lock = threading.Lock()
        self._pending: Counter[int] = Counter()
        self._last = time.monotonic()
        self.flush_every = flush_every

    def add(self, record_ids: list[int]) -> None:
        with self._lock:
            self._pending.update(record_ids)
            due = time.monotonic() - self._last >= self.flush_every
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, Counter()
            self._last = time.monotonic()
        if not pending:
            return
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                # Several daemons flush overlapping batches: rows locked in
                # id order, as the actions and the reconcile take them, wait
                # for each other instead of deadlocking.
                database_engine(connection).lock_rows(cursor, tables.RECORD_TABLE, list(pending))
                # Raw SQL on purpose: a counter bump is not a change of what is
                # true, so it has no audit event, leaves updated_at alone and (as
                # access_count is not a watched column) fires no index trigger.
                # `access_count + n` in the database: no daemon loses another's counts.
                for count in set(pending.values()):
                    ids = [rid for rid, c in pending.items() if c == count]
                    marks = ",".join(["%s"] * len(ids))
                    cursor.execute(
                        f"UPDATE {tables.RECORD_TABLE} SET access_count = access_count + %s WHERE id IN ({marks})",
                        [count, *ids],
                    )
        except DatabaseError as exc:
            # A counter must never fail the search that bumped it: keep the
            # counts for the next flush.
            log.warning("access counts not flushed (kept for the next flush): %s", exc)
            with self._lock:
                self._pending.update(pending)


access_counter = AccessCounter()
