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
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from asgiref.sync import sync_to_async
from django.conf import settings

from reviews import actions
from reviews import validation as v
from reviews.actions.agents import _token_digest as token_digest
from reviews.errors import RateLimited, Unauthorized
from reviews.models import Agent

from ..agent_api import initialize_limiter, read_limiter
from ..api.errors import http_error
from .sessions import agent_user, opens_session

_BODY_METHODS = {"POST", "PUT", "PATCH"}


async def _send_json(send, status: int, payload: dict, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


def _too_large(limit: int, size: int | None) -> dict:
    got = f"{size} bytes" if size is not None else f"more than {limit} bytes"
    return {"error": "too_large", "message": f"Request body is {got}; the limit is {limit} bytes "
                                             "(VETTED_MAX_REQUEST_BYTES). A record body may have at most "
                                             f"{v.BODY_MAX} characters."}


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
                return await _send_json(send, 400, {"error": "bad_request", "message": "Content-Length is not a number."})
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
    return actions.agent_for_token(token, via="mcp", address=address)


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
            description = exc.message.replace('"', "'")
            challenge = f'Bearer realm="vetted", error="invalid_token", error_description="{description}"'
            return await _send_json(send, 401, {"error": "unauthorized", "message": exc.message},
                                    [(b"www-authenticate", challenge.encode("latin-1", "replace"))])
        if opens_session(scope):
            try:
                initialize_limiter.hit(agent)
            except RateLimited as exc:
                return await _send_error(send, exc)
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
