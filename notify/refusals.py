"""Rate-limit refusals, counted in memory (a refusal has no transaction and
must not cost a database write); the sender reports a summary in its next
message. Standard library only: the gateway's limiter calls ``note``."""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_counts: Counter[str] = Counter()


def note(agent_name: str) -> None:
    """One refused call by ``agent_name`` (one dict update under a lock)."""
    with _lock:
        _counts[agent_name] += 1


def take() -> dict[str, int]:
    """The counts since the last take, cleared."""
    with _lock:
        counts = dict(_counts)
        _counts.clear()
        return counts


def give_back(counts: dict[str, int]) -> None:
    """Counts taken for a message that was not made after all."""
    with _lock:
        _counts.update(counts)
