"""Keeping publications in step while a process runs: after each decision
(any new audit event) and each change to a published file, every file is
synced again. A sync recomputes the block from the database, so a process
that crashed loses nothing: the next start syncs everything first.

Exactly one process follows a given set of files: the one holding the lock
``<VETTED_HOME>/publish-<digest of the paths>.lock``; another waits."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from .selection import Selection
from .sync import SyncResult, publish_file

log = logging.getLogger("vetted.publish")


def lock_path(paths: list[Path]) -> Path:
    key = "\n".join(sorted(str(p.resolve()) for p in paths))
    return Path(settings.VETTED_HOME) / f"publish-{hashlib.sha256(key.encode()).hexdigest()[:16]}.lock"


def follow(
    paths: list[Path],
    selection: Selection,
    *,
    stop: threading.Event,
    tick_ms: int = 500,
    on_sync: Callable[[list[SyncResult]], None] | None = None,
) -> None:
    import watchfiles
    from django.db import close_old_connections

    from portability.vault.watch import audit_head, hold_lock

    names = {p.resolve() for p in paths}
    folders = sorted({p.resolve().parent for p in paths})
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)

    def ours(_change, path: str) -> bool:
        return Path(path).resolve() in names

    with hold_lock(lock_path(paths), "Another process already publishes these files."):
        # The first sync runs inside the loop, once the watcher listens; a sync
        # that fails is tried again at the next tick.
        dirty, seen = True, None
        for changes in watchfiles.watch(
            *folders, watch_filter=ours, stop_event=stop, rust_timeout=tick_ms, yield_on_timeout=True, debounce=200
        ):
            close_old_connections()
            head = audit_head()  # read before the sync: a decision committed during it makes another
            dirty = dirty or bool(changes) or head != seen
            seen = head
            if not dirty:
                continue
            try:
                results = [publish_file(p, selection) for p in paths]
            except Exception:  # noqa: BLE001 - one bad sync must not stop the follower; said in the log
                log.exception("publish sync failed")
                continue
            dirty = False
            written = [r.path for r in results if r.state == "written"]
            if written:
                log.info("publish sync written=%d", len(written))
            if on_sync:
                on_sync(results)
