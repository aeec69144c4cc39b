"""Access counts of delivered records, batched so searches do not each take
the write lock."""

from __future__ import annotations

import threading
import time
from collections import Counter

from django.db import connection

from . import schema


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
        with connection.cursor() as cursor:
            # Raw SQL on purpose: a counter bump is not a change of what is
            # true, so it has no audit event, leaves updated_at alone and (as
            # access_count is not a watched column) fires no index trigger.
            for count in set(pending.values()):
                ids = [rid for rid, c in pending.items() if c == count]
                marks = ",".join(["%s"] * len(ids))
                cursor.execute(
                    f"UPDATE {schema.RECORD_TABLE} SET access_count = access_count + %s WHERE id IN ({marks})",
                    [count, *ids],
                )


access_counter = AccessCounter()
