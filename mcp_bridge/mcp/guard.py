"""ASGI guards in front of the agent endpoints (/mcp and /api/).

- Body size: a request body over VETTED_MAX_REQUEST_BYTES is refused with
  413 and the limit stated, before any of it reaches Django or the MCP SDK
  (whose own limit answers a bare "Request body too large").
- Agent token on /mcp: missing, malformed, unknown and revoked tokens get 401
  with a message saying which, and a WWW-Authenticate challenge. The REST API
  checks its tokens in DRF (mcp_bridge/api/auth.py) with the same messages.
  The agent goes into the scope as the identity its MCP sessions belong to
  (mcp_bridge/mcp/sessions.py), and a request that would open a session counts
  against VETTED_MCP_INITIALIZE_PER_MINUTE (429 with Retry-After past it).
- REST reads of an agent the read limit refused moments ago get the same 429
  here, before Django looks the token up, so a flooding agent's refused
  calls cost next to nothing and do not slow the others down.
- Origin on /mcp: a browser's Origin must be this site exactly (scheme, host
  and port), so a page on another port of an allowed host cannot drive /mcp.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from reviews import actions
from reviews import validation as v
from reviews.actions.agents import token_digest
from reviews.errors import RateLimited, Unauthorized
from reviews.models import Agent

from ..agent_api import initialize_limiter, read_limiter
from ..api.errors import http_error
from ..oauth.challenge import challenge as oauth_challenge
from . import shared_sessions
from .sessions import agent_user, opens_session

MCP_PATH = "/mcp"

_BODY_METHODS = {"POST", "PUT", "PATCH"}


async def _send_json(send, status: int, payload: dict, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _too_large(limit: int, size: int | None) -> dict:
    got = f"{size} bytes" if size is not None else f"more than {limit} bytes"
    return {
        "error": "too_large",
        "message": f"Request body is {got}; the limit is {limit} bytes "
        "(VETTED_MAX_REQUEST_BYTES). A record body may have at most "
        f"{v.BODY_MAX} characters.",
    }


def limit_body(app):
    """Buffer bodies of POST/PUT/PATCH up to the limit and replay them; refuse
    anything larger with 413 (Content-Length checked first, chunked counted)."""

    async def guarded(scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            return await app(scope, receive, send)
        limit = settings.VETTED_MAX_REQUEST_BYTES
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return await _send_json(
                    send, 400, {"error": "bad_request", "message": "Content-Length is not a number."}
                )
            if size > limit:
                return await _send_json(send, 413, _too_large(limit, size))
        chunks, total = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > limit:
                return await _send_json(send, 413, _too_large(limit, None))
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # later calls wait for the disconnect, as the app expects

        return await app(scope, replay, send)

    return guarded


async def _send_error(send, exc) -> None:
    status, body, headers = http_error(exc)
    await _send_json(send, status, body, [(name.lower().encode(), value.encode()) for name, value in headers.items()])


def _bearer(scope) -> str:
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


@sync_to_async
def _agent_for(token: str, address: str) -> Agent:
    audiences = actions.oauth.audiences_for(actions.oauth.mcp_resource())
    return actions.agent_for_token(token, via="mcp", address=address, audiences=audiences)


def require_agent_token(app):
    """Refuse MCP requests without a valid agent token before the SDK sees
    them; count new sessions; tell the SDK which agent is asking."""

    async def guarded(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        try:
            client = scope.get("client") or ("", 0)
            agent = await _agent_for(_bearer(scope), str(client[0]))
        except Unauthorized as exc:
            # RFC 9728 §5.1: the challenge names the resource metadata, where an
            # OAuth client starts; a request without a token gets no error code (RFC 6750 §3.1).
            sent = bool(_bearer(scope))
            challenge = oauth_challenge(MCP_PATH, "invalid_token" if sent else "", exc.message)
            return await _send_json(
                send,
                401,
                {"error": "unauthorized", "message": exc.message},
                [(b"www-authenticate", challenge.encode("latin-1", "replace"))],
            )
        if opens_session(scope):
            try:
                await initialize_limiter.ahit(agent)
            except RateLimited as exc:
                return await _send_error(send, exc)
            if shared_sessions.shared():  # several daemons: the session cap is one cap across them
                key = await sync_to_async(shared_sessions.reserve)(agent)
                reserved = shared_sessions.reservation.set(key)
                try:
                    return await app({**scope, "user": agent_user(agent.public_id)}, receive, send)
                finally:
                    shared_sessions.reservation.reset(reserved)
        return await app({**scope, "user": agent_user(agent.public_id)}, receive, send)

    return guarded


_NOT_READS = ("/api/v1/schema", "/api/v1/docs")  # public, and not agent reads


def refuse_limited_reads(app):
    """Answer a REST read (GET) from a token whose agent is still refused by
    the read limit with that 429 at once. A token that was revoked or
    replaced meanwhile gets the 429 until it runs out, then its 401."""

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET" and not scope["path"].startswith(_NOT_READS):
            token = _bearer(scope)
            refusal = read_limiter.refusing(token_digest(token)) if token else None
            if refusal is not None:
                return await _send_error(send, refusal)
        return await app(scope, receive, send)

    return guarded


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin, the port made explicit; None if it is not one."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path or parts.query or parts.username:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def _site_origins(server_port: int | None) -> set[tuple[str, str, int]]:
    """(scheme, "*", port) for each way this site itself is reached, "*"
    standing for any host in VETTED_ALLOWED_HOSTS: plain http at the port
    this server listens on, and https on 443 when a TLS proxy serves it
    (VETTED_HTTPS)."""
    keys = {("http", "*", server_port)} if server_port else set()
    if settings.VETTED_HTTPS:
        keys.add(("https", "*", 443))
    return keys


def origin_allowed(origin: str, server_port: int | None, host_header: str = "") -> bool:
    """Whether a browser Origin is this site, matching scheme, host and port
    exactly: a host in VETTED_ALLOWED_HOSTS at the port this server listens
    on, or exactly the Host the request was sent to (same-origin through a
    proxy on another port), or an origin listed in VETTED_CSRF_TRUSTED_ORIGINS."""
    key = _origin_key(origin)
    if key is None:
        return False
    if key in {trusted for trusted in map(_origin_key, settings.CSRF_TRUSTED_ORIGINS) if trusted}:
        return True
    scheme, host, port = key
    bracketed = f"[{host}]" if ":" in host else host  # ALLOWED_HOSTS writes IPv6 as [::1]
    if not validate_host(bracketed, settings.ALLOWED_HOSTS):
        return False
    if (scheme, "*", port) in _site_origins(server_port):
        return True
    addressed, port_text = split_domain_port(host_header)
    schemes = {"http", "https"} if settings.VETTED_HTTPS else {"http"}
    try:
        addressed_port = int(port_text) if port_text else _DEFAULT_PORTS[scheme]
    except ValueError:
        return False
    return scheme in schemes and addressed == bracketed and addressed_port == port


def _described_origins(server_port: int | None) -> str:
    hosts = [h for h in settings.ALLOWED_HOSTS if h != "*" and not h.startswith(".")][:4]
    shown = [
        f"{scheme}://{host}" + ("" if port == _DEFAULT_PORTS[scheme] else f":{port}")
        for scheme, _, port in sorted(_site_origins(server_port))
        for host in hosts
    ]
    shown += list(settings.CSRF_TRUSTED_ORIGINS)[:4]
    return ", ".join(shown) or "none (set VETTED_CSRF_TRUSTED_ORIGINS)"


def check_origin(app):
    """Refuse a request whose Origin header is not exactly this site (403, saying
    which origins are allowed); requests without one (agents, the stdio
    bridge) pass."""

    async def guarded(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        origins = [value for name, value in scope.get("headers") or [] if name == b"origin"]
        if origins:
            origin = origins[0].decode("latin-1")
            port = (scope.get("server") or (None, None))[1]
            host = next((value.decode("latin-1") for name, value in scope.get("headers") or [] if name == b"host"), "")
            if len(origins) > 1 or not origin_allowed(origin, port, host):
                return await _send_json(
                    send,
                    403,
                    {
                        "error": "forbidden",
                        "message": f"Origin {origin[:100]!r} may not use /mcp; allowed: {_described_origins(port)}. "
                        "Agents send no Origin header at all.",
                    },
                )
        return await app(scope, receive, send)

    return guarded
