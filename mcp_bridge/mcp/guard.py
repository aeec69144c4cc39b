"""ASGI guards in front of the agent endpoints (/mcp and /api/).

- Body size: a request body over VETTED_MAX_REQUEST_BYTES is refused with
  413 and the limit stated, before any of it reaches Django or the MCP SDK
  (whose own limit answers a bare "Request body too large").
- Agent token on /mcp: missing, malformed, unknown and revoked tokens get 401
  with a message saying which, and a WWW-Authenticate challenge. The REST API
  checks its tokens in DRF (mcp_bridge/api/auth.py) with the same messages.
"""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.conf import settings

from reviews import actions
from reviews import validation as v
from reviews.errors import Unauthorized

_BODY_METHODS = {"POST", "PUT", "PATCH"}


async def _send_json(send, status: int, payload: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
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


def _bearer(scope) -> str:
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


@sync_to_async
def _check_token(token: str) -> None:
    actions.agent_for_token(token)


def require_agent_token(app):
    """Refuse MCP requests without a valid agent token before the SDK sees them."""

    async def guarded(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        try:
            await _check_token(_bearer(scope))
        except Unauthorized as exc:
            description = exc.message.replace('"', "'")
            challenge = f'Bearer realm="vetted", error="invalid_token", error_description="{description}"'
            return await _send_json(send, 401, {"error": "unauthorized", "message": exc.message},
                                    [(b"www-authenticate", challenge.encode("latin-1", "replace"))])
        return await app(scope, receive, send)

    return guarded
