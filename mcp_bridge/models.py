"""The gateway's own bookkeeping tables (several daemons).

``CallMark`` holds the per-agent rate-limit windows when several daemons
serve one database (PostgreSQL): one row per allowed call, kept for a minute.
It is bookkeeping of the gateway, never state of the domain: no audit event,
and only mcp_bridge/agent_api/limits.py writes it.
"""

from __future__ import annotations

from django.db import models


class CallMark(models.Model):
    """One call an agent was allowed, for the limiter named ``limiter``."""

    agent_id = models.BigIntegerField()
    limiter = models.CharField(max_length=64)
    at = models.FloatField(help_text="Wall-clock seconds (time.time()) of the call, shared by every daemon.")

    class Meta:
        indexes = [models.Index(fields=["agent_id", "limiter", "at"], name="callmark_window")]

    def __str__(self) -> str:
        return f"{self.limiter} agent {self.agent_id} at {self.at:.3f}"


class OpenSession(models.Model):
    """An MCP session some daemon holds for an agent, so the per-agent
    session cap is one cap across daemons (PostgreSQL). ``closed``: another
    daemon closed it to make room; its daemon ends it at its next request.
    Written only by mcp_bridge/mcp/shared_sessions.py."""

    reservation = models.CharField(max_length=32, unique=True)
    session_id = models.CharField(max_length=64, blank=True, db_index=True)
    agent_id = models.BigIntegerField()
    opened_at = models.FloatField(help_text="Wall-clock seconds (time.time()) it was opened.")
    closed = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["agent_id", "closed", "opened_at"], name="opensession_agent")]

    def __str__(self) -> str:
        return f"session {self.session_id[:8]} of agent {self.agent_id}"
