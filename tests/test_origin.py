"""/mcp accepts a browser Origin only when it is this site exactly: scheme,
host and port (a page on another port of localhost is another site)."""

from __future__ import annotations

import asyncio
import json

import pytest

from mcp_bridge.mcp.guard import check_origin, origin_allowed

PORT = 8765


def answer(
    origin: str | list[str] | None, *, port: int | None = PORT, host: str = "127.0.0.1:8765"
) -> tuple[int, dict | None]:
    """Status and JSON body of a request through the Origin guard."""
    reached = []

    async def app(scope, receive, send):
        reached.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    origins = [] if origin is None else [origin] if isinstance(origin, str) else origin
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "server": ("127.0.0.1", port) if port else None,
        "headers": [(b"host", host.encode()), *((b"origin", o.encode()) for o in origins)],
    }
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    asyncio.run(check_origin(app)(scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    assert bool(reached) == (status == 200)
    return status, json.loads(body) if body else None


@pytest.mark.parametrize(
    "origin", ["http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765", "HTTP://LOCALHOST:8765"]
)
def test_this_sites_own_origin_is_accepted(origin):
    assert answer(origin)[0] == 200


def test_no_origin_is_accepted_agents_send_none():
    assert answer(None)[0] == 200


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:9999",  # another port of an allowed host: another site
        "http://localhost:8766",
        "http://127.0.0.1",  # port 80
        "https://127.0.0.1:8765",  # https is another origin than http
        "https://localhost",
        "http://evil.example.com:8765",
        "http://127.0.0.1.evil.example:8765",
        "null",
        "http://127.0.0.1:8765/path",
        "http://user@127.0.0.1:8765",
        "http://127.0.0.1:notaport",
        "file://",
        "",
    ],
)
def test_any_other_origin_is_refused_with_what_is_allowed(origin):
    status, body = answer(origin)
    assert status == 403
    assert body["error"] == "forbidden" and "http://127.0.0.1:8765" in body["message"]


def test_a_same_origin_request_through_a_proxy_on_another_port_is_accepted():
    # The browser talks to the proxy at :9000, which keeps the Host header.
    assert answer("http://127.0.0.1:9000", host="127.0.0.1:9000")[0] == 200
    assert answer("http://localhost:9000", host="127.0.0.1:9000")[0] == 403  # not the host it was sent to
    assert answer("https://127.0.0.1:9000", host="127.0.0.1:9000")[0] == 403
    assert answer("http://evil.example.com:9000", host="evil.example.com:9000")[0] == 403  # not an allowed host


def test_two_origin_headers_are_refused():
    assert answer(["http://127.0.0.1:8765", "http://evil.example.com"])[0] == 403


def test_https_behind_a_proxy_is_this_site_only_with_vetted_https(settings):
    settings.ALLOWED_HOSTS = ["memory.example.com"]
    assert not origin_allowed("https://memory.example.com", PORT)
    settings.VETTED_HTTPS = True
    assert origin_allowed("https://memory.example.com", PORT)
    assert origin_allowed("https://memory.example.com:443", PORT)
    assert not origin_allowed("https://memory.example.com:8443", PORT)
    assert not origin_allowed("https://other.example.com", PORT)


def test_an_origin_listed_in_csrf_trusted_origins_is_accepted_exactly(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://memory.example.com:8443"]
    assert origin_allowed("https://memory.example.com:8443", PORT)
    assert not origin_allowed("https://memory.example.com", PORT)
    assert not origin_allowed("http://memory.example.com:8443", PORT)
