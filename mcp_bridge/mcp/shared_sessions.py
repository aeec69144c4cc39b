"""The per-agent MCP session cap across daemons (PostgreSQL).

On SQLite one daemon serves the database, and ``AgentSessionManager``
counts an agent's sessions in memory. On PostgreSQL several daemons may
serve it, each with its own session manager, so the cap is kept in the
database (``mcp_bridge.models.OpenSession``), as the per-minute limits are:

- the /mcp guard reserves a row for a request that would open a session
  (``reserve``), under an advisory lock per agent; past the cap it marks the
  agent's oldest open rows closed, whichever daemon holds them;
- the session manager binds the reservation to the session id it creates
  (the reservation travels in a context variable, the same task), and
  deletes the row when the session ends;
- a daemon asked for a session another daemon closed ends it there and then
  (``closed_elsewhere``): the request gets the SDK's 404, and the client
  opens a new session, as after any cap closure.

A daemon that died leaves its rows behind: they are the oldest, so they are
the first closed to make room (no agent is locked out), and closed rows are
pruned after a day.
"""

from __future__ import annotations

import contextvars
import secrets
import time

from django.conf import settings
from django.db import connection, transaction

from dbengine import database_engine
from reviews.models import Agent

PRUNE_AFTER = 24 * 3600.0

# The reservation of the request being admitted (set by the guard, read by the session manager).
reservation: contextvars.ContextVar[str | None] = contextvars.ContextVar("vetted_session_reservation", default=None)


def shared() -> bool:
    return database_engine(connection).shared_by_processes


def reserve(agent: Agent) -> str:
    """Make room for one more session of ``agent`` across every daemon and
    reserve it; returns the reservation."""
    from mcp_bridge.models import OpenSession

    cap = settings.VETTED_MCP_SESSIONS_PER_AGENT
    now = time.time()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"vetted-sessions:{agent.pk}"])
        OpenSession.objects.filter(closed=True, opened_at__lt=now - PRUNE_AFTER).delete()
        held = list(
            OpenSession.objects.filter(agent_id=agent.pk, closed=False)
            .order_by("opened_at")
            .values_list("pk", flat=True)
        )
        excess = len(held) - cap + 1
        if excess > 0:
            OpenSession.objects.filter(pk__in=held[:excess]).update(closed=True)
        key = secrets.token_hex(16)
        OpenSession.objects.create(reservation=key, agent_id=agent.pk, opened_at=now)
    return key


def bind(key: str, session_id: str) -> None:
    from mcp_bridge.models import OpenSession

    OpenSession.objects.filter(reservation=key).update(session_id=session_id)


def release(session_id: str) -> None:
    from mcp_bridge.models import OpenSession

    OpenSession.objects.filter(session_id=session_id).delete()


def closed_elsewhere(session_id: str) -> bool:
    """Whether another daemon closed this session to keep its agent under the cap."""
    from mcp_bridge.models import OpenSession

    return OpenSession.objects.filter(session_id=session_id, closed=True).exists()
