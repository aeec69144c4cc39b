"""Wakes the sender when an outbox row commits in this process (an agent's
proposal through the daemon), so it need not wait for its next pass.
Standard library only: the actions call ``poke`` after their commit."""

from __future__ import annotations

import threading

_event = threading.Event()


def poke() -> None:
    _event.set()


def wait(timeout: float) -> None:
    """Until poked or ``timeout`` seconds passed."""
    _event.wait(timeout)
    _event.clear()
