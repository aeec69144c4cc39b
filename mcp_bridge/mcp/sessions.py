"""MCP sessions per agent: each session belongs to the agent that opened it,
and one agent holds at most VETTED_MCP_SESSIONS_PER_AGENT of them.

The SDK's session manager caps sessions for everyone together (10 000), so
without this one agent could open them all and every other agent, and every
stdio bridge, would get 503 until they expired (30 minutes idle). Here:

- The /mcp guard puts the agent into the ASGI scope as the SDK's
  ``AuthenticatedUser`` with the agent's public id as ``client_id``. The SDK
  binds each session to that identity and answers a request that carries
  another identity's session id with the same 404 as an unknown id (no
  oracle on other agents' sessions). A rotated token of the same agent keeps
  its sessions: the identity is the agent, not the token.
- ``AgentSessionManager`` closes an agent's oldest session when it opens one
  more than its cap: the session is forgotten at once (its id answers 404)
  and its transport is terminated, which ends its server task.

With several daemons over PostgreSQL the cap is one cap across them: the
registry in mcp_bridge/mcp/shared_sessions.py closes the agent's oldest
session whichever daemon holds it.

Only the legacy (2025-11-25) handshake opens sessions; the 2026-07-28
revision is stateless, one request at a time.

This relies on two hooks of the SDK's ``StreamableHTTPSessionManager``
(``_admit_session``, ``_discard_session``), checked at import so an SDK
that changes them stops the daemon instead of silently dropping the cap.
"""

from __future__ import annotations

import logging

import anyio
from django.db import close_old_connections
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.routing import Route

from . import shared_sessions
from .replay import RETRY_MS, SessionEventStore

log = logging.getLogger(__name__)

_MISSING = [
    name
    for name in ("_admit_session", "_discard_session", "_handle_stateful_request")
    if not hasattr(StreamableHTTPSessionManager, name)
]
if _MISSING:
    raise ImportError(
        f"The installed MCP SDK's session manager has no {', '.join(_MISSING)}; the per-agent "
        "session cap (mcp_bridge/mcp/sessions.py) was written for mcp 2.3."
    )

_SESSION_HEADER = MCP_SESSION_ID_HEADER.encode("ascii")
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.encode("ascii")


def _db(fn, *args):
    """Run ORM work in a worker thread and give its connection back."""

    def run():
        close_old_connections()
        try:
            return fn(*args)
        finally:
            close_old_connections()

    return anyio.to_thread.run_sync(run)


def agent_user(agent_id: str) -> AuthenticatedUser:
    """The identity the SDK binds a session to: the agent, not its token."""
    return AuthenticatedUser(AccessToken(token="", client_id=agent_id, scopes=[]))


def opens_session(scope) -> bool:
    """Would the SDK try to open a new session for this request? A POST
    without a session id on the handshake protocol (an ``initialize``, or
    something that fails like one), exactly what reaches ``_admit_session``."""
    if scope.get("method") != "POST":
        return False
    headers = dict(scope.get("headers") or [])
    if _SESSION_HEADER in headers:
        return False
    version = headers.get(_VERSION_HEADER)
    return version is None or version.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS


class AgentSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager with a cap per agent (closing the oldest)."""

    def __init__(self, app, *, per_agent: int, **kwargs):
        super().__init__(app, **kwargs)
        if not (
            isinstance(getattr(self, "_server_instances", None), dict)
            and isinstance(getattr(self, "_session_owners", None), dict)
            and hasattr(self, "_task_group")
            and hasattr(StreamableHTTPServerTransport, "_mint_priming_event")
        ):
            raise RuntimeError(
                "The installed MCP SDK's session manager does not keep _server_instances, "
                "_session_owners and _task_group; the per-agent session cap was written for mcp 2.3."
            )
        if per_agent < 1:
            raise ValueError("per_agent must be at least 1")
        self.per_agent = per_agent
        self._by_agent: dict[str, dict[str, None]] = {}  # agent id -> its session ids, oldest first
        self._agent_of: dict[str, str] = {}
        self._registered: set[str] = set()  # session ids with a row in the shared registry (PostgreSQL)

    async def _handle_stateful_request(self, scope, receive, send) -> None:
        # Several daemons (PostgreSQL): a session another daemon closed to keep
        # its agent under the cap ends here now, and the request gets the 404.
        session_id = dict(scope.get("headers") or []).get(_SESSION_HEADER)
        if session_id is not None and shared_sessions.shared():
            sid = session_id.decode("latin-1")
            if sid in self._server_instances and await _db(shared_sessions.closed_elsewhere, sid):
                log.info("MCP session %s… was closed by another daemon (the agent's session cap)", sid[:8])
                self.end_session(sid)
        await super()._handle_stateful_request(scope, receive, send)

    def _in_background(self, fn, *args) -> None:
        if self._task_group is not None:
            self._task_group.start_soon(_db, fn, *args)

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        # Runs under the SDK's session-creation lock, so the count is exact.
        if requestor is None:
            # Every request reaching here passed the agent-token guard; a
            # session without an owner could be used by anyone: refuse.
            log.error("refused an MCP session without an agent identity")
            return None
        agent_id = requestor["client_id"]
        held = self._by_agent.setdefault(agent_id, {})
        while len(held) >= self.per_agent:
            self._close_oldest(agent_id, next(iter(held)))
        transport = super()._admit_session(requestor)
        if transport is not None:
            # SSE priming and resumption (mcp_bridge/mcp/replay.py): a store of the session's own.
            transport._event_store = SessionEventStore()
            transport._retry_interval = RETRY_MS
        if transport is not None and transport.mcp_session_id is not None:  # stateful: always has an id
            held[transport.mcp_session_id] = None
            self._agent_of[transport.mcp_session_id] = agent_id
            key = shared_sessions.reservation.get()
            if key is not None:  # the guard reserved it in the shared registry
                self._registered.add(transport.mcp_session_id)
                self._in_background(shared_sessions.bind, key, transport.mcp_session_id)
        return transport

    def end_session(self, session_id: str) -> None:
        """Close one session now, as the cap closes the oldest: its credential
        ended (mcp_bridge/mcp/subscriptions.py)."""
        transport = self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        self._forget(session_id)
        if transport is not None and self._task_group is not None:
            log.info("closed MCP session %s… whose credential ended", session_id[:8])
            self._task_group.start_soon(self._discard_session, session_id, transport)

    def _close_oldest(self, agent_id: str, session_id: str) -> None:
        """Forget the session now (its id answers 404 from here on) and
        terminate its transport in the background, which ends its server task."""
        self._forget(session_id)
        transport = self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        log.info(
            "agent %s opened more than %d MCP sessions: closed its oldest, %s…",
            agent_id,
            self.per_agent,
            session_id[:8],
        )
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, session_id, transport)

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)

    def _forget(self, session_id: str) -> None:
        if session_id in self._registered:
            self._registered.discard(session_id)
            self._in_background(shared_sessions.release, session_id)
        agent_id = self._agent_of.pop(session_id, None)
        if agent_id is not None:
            held = self._by_agent.get(agent_id, {})
            held.pop(session_id, None)
            if not held:
                self._by_agent.pop(agent_id, None)


def streamable_http_app(
    server: MCPServer,
    *,
    path: str,
    transport_security: TransportSecuritySettings,
    max_request_body_size: int,
    sessions_per_agent: int,
) -> Starlette:
    """What ``server.streamable_http_app()`` builds for a server without SDK
    auth (the guard in front does auth), with ``AgentSessionManager``."""
    lowlevel = server._lowlevel_server
    manager = AgentSessionManager(
        lowlevel,
        per_agent=sessions_per_agent,
        security_settings=transport_security,
        max_request_body_size=max_request_body_size,
    )
    lowlevel._session_manager = manager  # so server.session_manager is this one, as the SDK's builder does
    app = Starlette(routes=[Route(path, endpoint=StreamableHTTPASGIApp(manager))], lifespan=lambda app: manager.run())
    app.state.session_manager = manager
    return app
