"""Remembered publications inside `serve`: one thread each, following its
files while this daemon holds their lock and otherwise waiting to take over
(several daemons: the first to take a publication's lock follows it)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from .follow import follow
from .registry import remembered
from .selection import Selection, SelectionError

log = logging.getLogger("vetted.publish")
RETRY_SECONDS = 5.0


def run_forever(paths: list[Path], selection: Selection, stop: threading.Event) -> None:
    from django.db import connection

    from portability.vault.watch import VaultBusy

    try:
        while not stop.is_set():
            try:
                follow(paths, selection, stop=stop)
            except VaultBusy:
                stop.wait(RETRY_SECONDS)
            except SelectionError as exc:
                log.error("publish: %s; not following %s", exc, ", ".join(map(str, paths)))
                return
            except Exception:
                log.exception("publish: the follower failed; starting again")
                stop.wait(RETRY_SECONDS)
    finally:
        connection.close()


def start_threads() -> int:
    """A thread per remembered publication; how many were started."""
    publications = remembered()
    for paths, selection in publications:
        stop = threading.Event()
        threading.Thread(target=run_forever, args=(paths, selection, stop), name="vetted-publish", daemon=True).start()
    return len(publications)
