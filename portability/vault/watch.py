"""Watching a vault folder with watchfiles (OS file events; the watcher
uvicorn uses for --reload) and re-syncing after each decision.

Exactly one process watches a folder: the one holding an exclusive lock on
``<folder>/.vetted-vault.lock`` (``flock``). Another daemon started for the
same folder finds it taken and waits, taking over when the holder exits (the
kernel releases the lock with the process, even after a crash)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from reviews.models import AuditEvent

from .reconcile import VaultResult, reconcile
from .state import VaultError

LOCK_NAME = ".vetted-vault.lock"
log = logging.getLogger("vetted.vault")


class VaultBusy(Exception):
    """Another process watches this folder."""


@contextlib.contextmanager
def hold_vault(root: Path) -> Iterator[None]:
    """The folder's watcher lock, or VaultBusy at once."""
    root.mkdir(parents=True, exist_ok=True)
    with hold_lock(root / LOCK_NAME, f"Another process already watches {root}."):
        yield


@contextlib.contextmanager
def hold_lock(path: Path, busy: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` for the block, or VaultBusy(busy) at once;
    the kernel releases it when the process ends, however it ends."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise VaultBusy(busy) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)


def _ours(_change, path: str) -> bool:
    """Events worth a pass: not Vetted's own temporary files, manifest or lock (hidden names)."""
    return not Path(path).name.startswith(".")


def audit_head() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def watch_vault(
    root: Path | str,
    person: str,
    *,
    stop: threading.Event,
    tick_ms: int = 500,
    on_pass: Callable[[VaultResult], None] | None = None,
) -> None:
    """Reconcile now, then after each batch of file events under ``root`` and
    after each new audit event (a decision, a proposal), until ``stop`` is set."""
    import watchfiles
    from django.db import close_old_connections

    root = Path(root)
    with hold_vault(root):
        # The first pass runs inside the loop, once the watcher is already
        # listening: an edit made while it runs is then not missed. A pass that
        # fails is tried again at the next tick (its events are gone by then).
        dirty, seen = True, None
        for changes in watchfiles.watch(
            root, watch_filter=_ours, stop_event=stop, rust_timeout=tick_ms, yield_on_timeout=True, debounce=200
        ):
            close_old_connections()
            head = audit_head()  # read before the pass: a decision committed during it makes another
            dirty = dirty or bool(changes) or head != seen
            seen = head
            if not dirty:
                continue
            try:
                result = reconcile(root, person)
            except VaultError:
                raise  # not this person's vault, or not a vault: no pass will ever do
            except Exception:  # noqa: BLE001 - one bad pass must not stop the watcher; said in the log
                log.exception("vault pass failed for %s", root)
                continue
            dirty = False
            if result.proposals or result.written or result.removed:
                log.info(
                    "vault pass written=%d removed=%d proposals=%s",
                    len(result.written),
                    len(result.removed),
                    ",".join(result.proposals),
                )
            if on_pass:
                on_pass(result)
