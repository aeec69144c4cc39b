"""The gateway's own bookkeeping tables (issue 17, several daemons).

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
