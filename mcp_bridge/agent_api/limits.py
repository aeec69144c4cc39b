"""The per-agent rate limits: writes (proposals) and reads per minute, and
new MCP sessions per minute, all one sliding-window class.

Where the window lives (several daemons): on SQLite, in this
process. One daemon serves a SQLite file (the serve lock in VETTED_HOME), so
an in-memory window sees every call and costs no write. On PostgreSQL,
several daemons may serve one database, so the window is in the database
(``mcp_bridge.models.CallMark``, one row per allowed call for a minute), held
per agent and limiter by a transaction-scoped advisory lock: an agent at its
limit on one daemon is at it on every other.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection, transaction

from dbengine import database_engine
from notify import refusals
from reviews.errors import RateLimited
from reviews.models import Agent

log = logging.getLogger(__name__)


class SlidingWindowLimiter:
    """At most ``settings.<setting>`` calls per agent in any sliding minute,
    counted in this process (0 turns it off). With ``spread`` > 1, also at
    most a ``spread``-th of them (but at least BURST_FLOOR) in any
    ``60 / spread`` seconds, so an agent cannot spend the whole minute's
    allowance in one burst (which is what slows the other agents down).

    On SQLite one daemon process serves the database (REST and MCP share it,
    and the stdio bridge proxies to it), so an in-memory window sees every
    call; on PostgreSQL the window is in the database (see the module
    docstring), and ``now`` is wall-clock time, shared by every host. A refused
    call is not counted, so an agent that keeps knocking gets in again as
    soon as the window allows. Cheap: one short critical section, one
    timestamp per allowed call (at most ``limit`` per agent, sorted), old
    ones dropped from the left.
    """

    WINDOW = 60.0
    BURST_FLOOR = 10  # a short window never allows fewer calls than this (low limits stay usable)

    def __init__(self, setting: str, verb: str, what: str, *, spread: int = 1):
        self.setting, self.verb, self.what, self.spread = setting, verb, what, spread
        self._lock = threading.Lock()
        self._calls: dict[str, deque[float]] = {}
        # token digest -> (monotonic time the agent may call again, refusal message)
        self._refusing: dict[str, tuple[float, str]] = {}

    @property
    def limit(self) -> int:
        return getattr(settings, self.setting)

    def _windows(self, limit: int) -> list[tuple[float, int]]:
        """(seconds, calls allowed in them)."""
        windows = [(self.WINDOW, limit)]
        if self.spread > 1 and limit > self.BURST_FLOOR:
            windows.append((self.WINDOW / self.spread, max(self.BURST_FLOOR, math.ceil(limit / self.spread))))
        return windows

    def hit(self, agent: Agent, *, now: float | None = None, cost: int = 1) -> None:
        """Count one call by ``agent``, or raise RateLimited (nothing counted).
        An expensive call (a long query, a stream of many subscriptions)
        weighs ``cost`` calls, never more than the smallest window allows (so
        it can always get in once the window is empty)."""
        limit = self.limit
        if not limit:
            return
        cost = max(1, min(int(cost), min(allowed for _span, allowed in self._windows(limit))))
        if self.shared():
            wall = time.time() if now is None else now
            now = time.monotonic() if now is None else now  # the early-refusal cache is this process's
            # Refused moments ago: still refused (only time frees the window,
            # on every daemon alike), and a flood of refusals costs no query.
            cached = self.refusing(agent.token_digest, now=now) if agent.token_digest else None
            if cached is not None:
                refusals.note(agent.name)
                raise cached
            wait = self._hit_in_database(agent, limit, wall, cost)
            if not wait:
                return
        else:
            now = time.monotonic() if now is None else now
            wait = 0.0
            with self._lock:
                calls = self._calls.setdefault(agent.public_id, deque())
                while calls and calls[0] <= now - self.WINDOW:
                    calls.popleft()
                for span, allowed in self._windows(limit):
                    # Full when the call ``cost`` places before the allowed-th most
                    # recent is still inside the span (cost 1: the allowed-th itself).
                    room = allowed - cost + 1
                    if len(calls) >= room and calls[-room] > now - span:
                        wait = max(wait, calls[-room] + span - now)
                if not wait:
                    calls.extend([now] * cost)
                    return
        refusals.note(agent.name)  # notify: counted in memory, summarised in the next message
        message = f"Rate limit: agent {agent.name!r} may {self.verb} {self.describe()} ({self.setting})"
        with self._lock:
            earlier = self._refusing.get(agent.token_digest or "")
            # Remembered for early refusals only when an ordinary call was refused:
            # a heavy call refused says nothing of whether a light one still fits.
            if agent.token_digest and cost == 1:
                self._refusing[agent.token_digest] = (now + wait, message)
        if earlier is None or earlier[0] <= now:  # once per spell of refusals, not once per refused call
            log.info(
                "rate limited: agent=%s (%s) limit=%s %s retry_after=%ds",
                agent.name,
                agent.public_id,
                self.setting,
                self.describe(),
                max(1, math.ceil(wait)),
            )
        retry_after = max(1, math.ceil(wait))
        raise RateLimited(f"{message}; retry in {retry_after} s.", retry_after=retry_after)

    async def ahit(self, agent: Agent) -> None:
        """``hit`` from async code (the /mcp guard): through a worker thread
        when the window is in the database, at once when it is in memory."""
        if self.shared():
            await sync_to_async(self.hit)(agent)
        else:
            self.hit(agent)

    @staticmethod
    def shared() -> bool:
        """Is the window in the database (PostgreSQL: several daemons may serve it)?"""
        return database_engine(connection).shared_by_processes

    def _hit_in_database(self, agent: Agent, limit: int, now: float, cost: int = 1) -> float:
        """The shared window: the seconds to wait, or 0 with this call counted.
        The advisory lock serialises one agent's calls on one limiter across
        every daemon, so two daemons cannot both let the limit-th call in."""
        from mcp_bridge.models import CallMark

        table = CallMark._meta.db_table
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"vetted-limit:{self.setting}:{agent.pk}"])
            cursor.execute(
                f"DELETE FROM {table} WHERE agent_id = %s AND limiter = %s AND at <= %s",
                [agent.pk, self.setting, now - self.WINDOW],
            )
            wait = 0.0
            for span, allowed in self._windows(limit):
                # Full when the allowed-th most recent call is still inside the span.
                cursor.execute(
                    f"SELECT at FROM {table} WHERE agent_id = %s AND limiter = %s ORDER BY at DESC LIMIT 1 OFFSET %s",
                    [agent.pk, self.setting, allowed - cost],
                )
                row = cursor.fetchone()
                if row is not None and row[0] > now - span:
                    wait = max(wait, row[0] + span - now)
            if not wait:
                cursor.executemany(
                    f"INSERT INTO {table} (agent_id, limiter, at) VALUES (%s, %s, %s)",
                    [[agent.pk, self.setting, now]] * cost,
                )
        return wait

    def refusing(self, token_digest: str, *, now: float | None = None) -> RateLimited | None:
        """The refusal for a token whose agent was refused moments ago and may
        not call yet, without looking the token up: the guard in front of the
        REST reads answers these before Django, so a flood of refused calls
        costs next to nothing. None when the agent may call (or is unknown)."""
        entry = self._refusing.get(token_digest)
        if entry is None:
            return None
        now = time.monotonic() if now is None else now
        until, message = entry
        if now >= until:
            with self._lock:
                if self._refusing.get(token_digest) == entry:
                    del self._refusing[token_digest]
            return None
        retry_after = max(1, math.ceil(until - now))
        return RateLimited(f"{message}; retry in {retry_after} s.", retry_after=retry_after)

    def describe(self) -> str:
        limit = self.limit
        if not limit:
            return "none"
        windows = self._windows(limit)
        burst = "".join(f", at most {allowed} in any {span:g} s" for span, allowed in windows[1:])
        return f"{limit} {self.what} per minute{burst}"

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()
            self._refusing.clear()
        if self.shared():
            from mcp_bridge.models import CallMark

            CallMark.objects.filter(limiter=self.setting).delete()


# Every write call counts, refused ones included: an agent stuck in a loop of
# invalid proposals is slowed down as much as one flooding the inbox.
write_limiter = SlidingWindowLimiter("VETTED_PROPOSALS_PER_MINUTE", "send", "proposals")
read_limiter = SlidingWindowLimiter("VETTED_READS_PER_MINUTE", "make", "reads", spread=10)
# New MCP sessions (initialize requests), checked by the /mcp guard.
initialize_limiter = SlidingWindowLimiter("VETTED_MCP_INITIALIZE_PER_MINUTE", "open", "MCP sessions")
