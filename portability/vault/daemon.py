"""The vault inside `serve`: a thread that watches the folder while this
daemon holds its lock, and otherwise waits to take over (several daemons
over one database: the first to take the lock watches)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from .state import VaultError
from .watch import VaultBusy, watch_vault

log = logging.getLogger("vetted.vault")
RETRY_SECONDS = 5.0


def run_forever(root: Path, person: str, stop: threading.Event) -> None:
    from django.db import connection

    try:
        while not stop.is_set():
            try:
                watch_vault(root, person, stop=stop)
            except VaultBusy:
                stop.wait(RETRY_SECONDS)  # another daemon watches; take over when it stops
            except VaultError as exc:
                log.error("vault: %s; not watching", exc)
                return
            except Exception:
                log.exception("vault: the watcher failed; starting again")
                stop.wait(RETRY_SECONDS)
    finally:
        connection.close()


def start_thread(root: Path, person: str) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=run_forever, args=(root, person, stop), name="vetted-vault", daemon=True)
    thread.start()
    return thread, stop
