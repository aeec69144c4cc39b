"""The write rate limit: how many proposals an agent may send per minute."""

from __future__ import annotations

import threading
import time
from collections import deque

from django.conf import settings

from reviews.errors import RateLimited
from reviews.models import Agent


class ProposalRateLimiter:
    """Sliding one-minute window of write calls per agent, in this process.

    Vetted runs as one daemon process (REST and MCP share it, and the stdio
    bridge proxies to it), so an in-memory window sees every write. Every
    write call counts, refused ones included: an agent stuck in a loop of
    invalid proposals is slowed down as much as one flooding the inbox.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._calls: dict[str, deque[float]] = {}

    def hit(self, agent: Agent, *, now: float | None = None) -> None:
        limit = settings.VETTED_PROPOSALS_PER_MINUTE
        if not limit:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            calls = self._calls.setdefault(agent.public_id, deque())
            while calls and calls[0] <= now - 60:
                calls.popleft()
            if len(calls) >= limit:
                retry_after = max(1, int(calls[0] + 60 - now + 0.999))
                raise RateLimited(
                    f"Rate limit: agent {agent.name!r} may send {limit} proposals per minute; "
                    f"retry in {retry_after} s.",
                    retry_after=retry_after,
                )
            calls.append(now)

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()


rate_limiter = ProposalRateLimiter()
