"""OAuth 2.1 for remote agents, without a browser or a process: the daemon's
own ASGI application in process (the SDK's handlers over Vetted's provider,
the guard on /mcp, DRF on /api), the consent page through Django's test
client as the signed-in reviewer, and the metadata-document fetch guard
against real sockets on loopback.

The end-to-end run with the SDK's OAuth client, a real daemon and Chromium
playing the reviewer is tests/test_oauth_browser.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import socket
import threading
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge.oauth import cimd
from reviews.models import AuditEvent
from reviews.oauth_models import OAuthClient, OAuthGrant, OAuthToken
from tests.oauth_support import document_server, pkce

BASE = "http://127.0.0.1:8765"  # VETTED_PUBLIC_URL's default, which the tests keep
REDIRECT = "http://127.0.0.1:33418/callback"


class Gateway:
    """build_application() on an event loop in a thread (lifespan started, as
    `serve` does); sync tests call it with ``request`` and ``mcp``."""

    def __init__(self):
        from memory_site.asgi import build_application

        self.app = build_application()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.messages, self.task = self.run(self._start())

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    async def _start(self):
        messages: asyncio.Queue = asyncio.Queue()
        started = asyncio.Event()

        async def receive():
            return await messages.get()

        async def send(message):
            if message["type"] == "lifespan.startup.complete":
                started.set()

        await messages.put({"type": "lifespan.startup"})
        task = asyncio.ensure_future(self.app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send))
        await started.wait()
        return messages, task

    def close(self):
        async def stop():
            await self.messages.put({"type": "lifespan.shutdown"})
            await self.task

        self.run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def client(self, **kwargs) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=self.app), base_url=BASE, **kwargs)

    def request(self, method: str, path: str, **kwargs) -> httpx2.Response:
        async def go():
            async with self.client() as http:
                response = await http.request(method, path, **kwargs)
                await response.aread()
                return response

        return self.run(go())

    def mcp(self, token: str, fn):
        async def go():
            async with self.client(headers={"Authorization": f"Bearer {token}"}) as http:
                async with Client(streamable_http_client(BASE + "/mcp", http_client=http)) as client:
                    return await fn(client)

        return self.run(go())

    def tool_names(self, token: str) -> list[str]:
        async def names(client):
            return [t.name for t in (await client.list_tools()).tools]

        return self.mcp(token, names)


@pytest.fixture
def gw(transactional_db):
    """The gateway answers from its own threads, which see only committed
    rows: every test that talks to it runs on a transactional database (the
    fetch guard's own tests need none, and skip the flush after each)."""
    gateway = Gateway()
    yield gateway
    gateway.close()


@pytest.fixture
def site(reviewer):
    browser = DjangoClient()
    browser.force_login(reviewer)
    return browser


def register(gw, **overrides) -> str:
    body = {"client_name": "Test Connector", "redirect_uris": [REDIRECT], **overrides}
    response = gw.request("POST", "/register", json=body)
    assert response.status_code == 201, response.text
    return response.json()["client_id"]


def authorize(gw, client_id: str, challenge: str, **overrides) -> httpx2.Response:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "scope": "personal team",
        "resource": BASE + "/mcp",
        **overrides,
    }
    return gw.request("GET", "/authorize?" + urlencode({k: v for k, v in params.items() if v is not None}))


def consent_url(gw, client_id: str, challenge: str, **overrides) -> str:
    response = authorize(gw, client_id, challenge, **overrides)
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(BASE + "/oauth/consent?"), location
    return location[len(BASE) :]


def allow(site, url: str, **form) -> dict:
    page = site.get(url)
    assert page.status_code == 200, page.content
    signed = parse_qs(urlsplit(url).query)["request"][0]
    data = {"request": signed, "decision": "allow", "agent": "new", "new_agent_name": "connector", "scopes": ["team"]}
    response = site.post("/oauth/consent", {**data, **form})
    assert response.status_code == 302, response.content.decode()[:2000]
    return {k: v[0] for k, v in parse_qs(urlsplit(response["Location"]).query).items()}


def exchange(gw, client_id: str, code: str, verifier: str, **overrides) -> httpx2.Response:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": BASE + "/mcp",
        **overrides,
    }
    return gw.request("POST", "/token", data=data)


def signed_in(gw, site, **consent) -> tuple[str, dict]:
    client_id = register(gw)
    verifier, challenge = pkce()
    answer = allow(site, consent_url(gw, client_id, challenge), **consent)
    response = exchange(gw, client_id, answer["code"], verifier)
    assert response.status_code == 200, response.text
    return client_id, response.json()


# --------------------------------------------------------------------------- metadata


def test_protected_resource_metadata_at_both_paths_names_this_server(gw):
    for path, resource in (("", BASE), ("/mcp", BASE + "/mcp"), ("/api/v1", BASE + "/api/v1")):
        response = gw.request("GET", "/.well-known/oauth-protected-resource" + path)
        assert response.status_code == 200
        assert response.json()["resource"] == resource
        assert response.json()["authorization_servers"] == [BASE]


def test_authorization_server_metadata_says_s256_public_clients_and_metadata_documents(gw):
    meta = gw.request("GET", "/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == BASE
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["token_endpoint_auth_methods_supported"] == ["none"]
    assert meta["client_id_metadata_document_supported"] is True
    assert meta["registration_endpoint"] == BASE + "/register"
    assert meta["revocation_endpoint"] == BASE + "/revoke"


def test_every_401_from_mcp_and_api_names_the_resource_metadata(gw, agent_tokens):
    for path, method, headers in (
        ("/mcp", "POST", {}),
        ("/mcp", "POST", {"Authorization": "Bearer vt_nope"}),
        ("/api/v1/records", "GET", {}),
        ("/api/v1/records", "GET", {"Authorization": "Bearer vt_at_nope"}),
    ):
        response = gw.request(method, path, headers=headers, json={} if method == "POST" else None)
        assert response.status_code == 401, (path, response.text)
        suffix = "/mcp" if path == "/mcp" else "/api/v1"
        expected = f'resource_metadata="{BASE}/.well-known/oauth-protected-resource{suffix}"'
        assert expected in response.headers["www-authenticate"], response.headers


# --------------------------------------------------------------------------- the flow


def test_sign_in_consent_tools_refresh_and_revoke(gw, site, reviewer):
    client_id, tokens = signed_in(gw, site)
    assert tokens["scope"] == "team" and tokens["access_token"].startswith("vt_at_")
    assert "list" in gw.tool_names(tokens["access_token"])

    async def describe(client):
        return (await client.call_tool("describe", {})).structured_content

    described = gw.mcp(tokens["access_token"], describe)
    assert [s["slug"] for s in described["spaces"]] == ["team"]
    # The REST API takes a token issued for /mcp? No: another endpoint's audience.
    api = gw.request("GET", "/api/v1/records", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert api.status_code == 401 and "issued for" in api.json()["message"]

    refreshed = gw.request(
        "POST",
        "/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id},
    )
    assert refreshed.status_code == 200, refreshed.text
    new = refreshed.json()
    assert new["refresh_token"] != tokens["refresh_token"]
    assert "describe" in gw.tool_names(new["access_token"])

    revoked = gw.request("POST", "/revoke", data={"token": new["access_token"], "client_id": client_id})
    assert revoked.status_code == 200
    after = gw.request("POST", "/mcp", headers={"Authorization": f"Bearer {new['access_token']}"}, json={})
    assert after.status_code == 401 and "revoked" in after.json()["message"]
    again = gw.request(
        "POST",
        "/token",
        data={"grant_type": "refresh_token", "refresh_token": new["refresh_token"], "client_id": client_id},
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    events = list(AuditEvent.objects.filter(event_type__startswith="oauth.").values_list("event_type", flat=True))
    assert {"oauth.client_registered", "oauth.granted", "oauth.tokens_issued", "oauth.tokens_refreshed"} <= set(events)
    assert "oauth.revoked" in events


def test_tokens_are_stored_only_as_digests(gw, site):
    _client_id, tokens = signed_in(gw, site)
    stored = set(OAuthToken.objects.values_list("digest", flat=True))
    for raw in (tokens["access_token"], tokens["refresh_token"]):
        assert raw not in stored and hashlib.sha256(raw.encode()).hexdigest() in stored


def test_a_grant_for_an_existing_agent_narrows_never_widens_its_scopes(gw, site, agent):
    client_id = register(gw)
    verifier, challenge = pkce()
    url = consent_url(gw, client_id, challenge)
    signed = parse_qs(urlsplit(url).query)["request"][0]
    wider = site.post(
        "/oauth/consent", {"request": signed, "decision": "allow", "agent": agent.name, "scopes": ["system"]}
    )
    assert wider.status_code == 400 and b"not among" in wider.content
    answer = allow(site, url, agent=agent.name, scopes=["personal"])
    tokens = exchange(gw, client_id, answer["code"], verifier).json()

    async def describe(client):
        return (await client.call_tool("describe", {})).structured_content

    assert [s["slug"] for s in gw.mcp(tokens["access_token"], describe)["spaces"]] == ["personal"]
    assert OAuthGrant.objects.get().agent == agent


def test_revoking_the_agent_on_the_agents_page_revokes_its_oauth_tokens(gw, site):
    _client_id, tokens = signed_in(gw, site)
    page = site.get("/agents/")
    assert b"Test Connector" in page.content and b"Revoke sign-in" in page.content
    site.post("/agents/connector/revoke")
    assert OAuthToken.objects.filter(revoked_at=None).count() == 0
    after = gw.request("POST", "/mcp", headers={"Authorization": f"Bearer {tokens['access_token']}"}, json={})
    assert after.status_code == 401


def test_revoking_one_grant_from_the_agents_page_keeps_the_agent(gw, site):
    _client_id, tokens = signed_in(gw, site)
    grant = OAuthGrant.objects.get()
    site.post(f"/agents/grants/{grant.public_id}/revoke")
    assert (
        gw.request("POST", "/mcp", headers={"Authorization": f"Bearer {tokens['access_token']}"}, json={}).status_code
        == 401
    )
    assert grant.agent.__class__.objects.get(pk=grant.agent.pk).is_active


def test_the_reviewer_may_deny(gw, site):
    client_id = register(gw)
    _verifier, challenge = pkce()
    url = consent_url(gw, client_id, challenge)
    signed = parse_qs(urlsplit(url).query)["request"][0]
    response = site.post("/oauth/consent", {"request": signed, "decision": "deny"})
    query = parse_qs(urlsplit(response["Location"]).query)
    assert query["error"] == ["access_denied"] and query["state"] == ["st-1"] and query["iss"] == [BASE]
    assert not OAuthGrant.objects.exists()


def test_the_consent_page_needs_a_signed_in_reviewer_and_an_unaltered_request(gw, site):
    client_id = register(gw)
    _verifier, challenge = pkce()
    url = consent_url(gw, client_id, challenge)
    assert DjangoClient().get(url).status_code == 302  # to the sign-in page
    page = site.get(url).content.decode()
    assert "Test Connector" in page and "127.0.0.1:33418" in page and "never decide" in page
    tampered = url.replace("request=", "request=x")
    assert site.get(tampered).status_code == 400


# --------------------------------------------------------------------------- refusals


def test_plain_pkce_is_refused(gw):
    client_id = register(gw)
    response = authorize(gw, client_id, "a" * 43, code_challenge_method="plain")
    assert response.status_code == 302
    assert parse_qs(urlsplit(response.headers["location"]).query)["error"] == ["invalid_request"]


def test_a_redirect_uri_not_registered_is_refused_without_redirecting(gw):
    client_id = register(gw)
    _verifier, challenge = pkce()
    response = authorize(gw, client_id, challenge, redirect_uri="https://evil.example/cb")
    assert response.status_code == 400 and "not registered" in response.text


def test_a_token_for_another_audience_is_never_issued(gw):
    client_id = register(gw)
    _verifier, challenge = pkce()
    response = authorize(gw, client_id, challenge, resource="https://other.example/mcp")
    assert parse_qs(urlsplit(response.headers["location"]).query)["error"] == ["invalid_target"]


def test_a_token_bound_to_another_audience_is_refused(gw, site, settings):
    _client_id, tokens = signed_in(gw, site)
    OAuthGrant.objects.update(resource="https://other.example/mcp")
    response = gw.request("POST", "/mcp", headers={"Authorization": f"Bearer {tokens['access_token']}"}, json={})
    assert response.status_code == 401 and "issued for 'https://other.example/mcp'" in response.json()["message"]


def test_a_wrong_pkce_verifier_is_refused(gw, site):
    client_id = register(gw)
    _verifier, challenge = pkce()
    answer = allow(site, consent_url(gw, client_id, challenge))
    response = exchange(gw, client_id, answer["code"], secrets.token_urlsafe(48))
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert "code_verifier" in response.json()["error_description"]


def test_a_replayed_code_is_refused_and_revokes_what_it_gave(gw, site):
    client_id = register(gw)
    verifier, challenge = pkce()
    answer = allow(site, consent_url(gw, client_id, challenge))
    first = exchange(gw, client_id, answer["code"], verifier)
    assert first.status_code == 200
    second = exchange(gw, client_id, answer["code"], verifier)
    assert second.status_code == 400 and second.json()["error"] == "invalid_grant"
    token = first.json()["access_token"]
    assert gw.request("POST", "/mcp", headers={"Authorization": f"Bearer {token}"}, json={}).status_code == 401


def test_a_reused_refresh_token_revokes_the_grant(gw, site):
    client_id, tokens = signed_in(gw, site)
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
    new = gw.request("POST", "/token", data=data).json()
    assert gw.request("POST", "/token", data=data).status_code == 400
    assert (
        gw.request("POST", "/mcp", headers={"Authorization": f"Bearer {new['access_token']}"}, json={}).status_code
        == 401
    )


def test_registration_makes_a_public_client_and_keeps_no_secret(gw):
    response = gw.request(
        "POST",
        "/register",
        json={"client_name": "C", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"},
    )
    body = response.json()
    assert response.status_code == 201 and body["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in body


def test_registration_refuses_a_plain_http_redirect_to_another_host(gw):
    response = gw.request("POST", "/register", json={"client_name": "C", "redirect_uris": ["http://evil.example/cb"]})
    assert response.status_code == 400 and "loopback" in response.text


def test_static_agent_tokens_keep_working(gw, agent_tokens):
    assert "search" in gw.tool_names(agent_tokens["claude-code"])


# --------------------------------------------------------------------------- metadata documents


@pytest.fixture(scope="module")
def _document_server():
    with document_server() as served:
        yield served


@pytest.fixture
def docs(_document_server):
    """A document server on loopback (tests/oauth_support.py), one for the
    module (its shutdown waits up to half a second); each test starts with
    no routes."""
    base, routes = _document_server
    routes.clear()
    yield base, routes
    routes.clear()


def document(url: str, **overrides) -> bytes:
    return json.dumps(
        {"client_id": url, "client_name": "Doc Client", "redirect_uris": [REDIRECT], **overrides}
    ).encode()


LOOPBACK_OK = cimd.Policy(allow_loopback_http=True)


def test_a_metadata_document_client_signs_in(gw, site, docs):
    base, routes = docs
    url = base + "/oauth/client.json"
    routes["/oauth/client.json"] = (200, {"Content-Type": "application/json"}, document(url))
    verifier, challenge = pkce()
    answer = allow(site, consent_url(gw, url, challenge))
    assert exchange(gw, url, answer["code"], verifier).status_code == 200
    assert OAuthClient.objects.get(client_id=url).client_name == "Doc Client"


def test_the_fetch_guard_refuses_a_redirect(docs):
    base, routes = docs
    routes["/c.json"] = (302, {"Location": base + "/other.json"}, b"")
    with pytest.raises(cimd.DocumentRefused, match="redirect"):
        cimd.fetch_document(base + "/c.json", LOOPBACK_OK)


def test_the_fetch_guard_refuses_an_oversize_document(docs):
    base, routes = docs
    routes["/big.json"] = (200, {}, b"{" + b" " * (cimd.MAX_BYTES + 10) + b"}")
    with pytest.raises(cimd.DocumentRefused, match="larger than"):
        cimd.fetch_document(base + "/big.json", LOOPBACK_OK)


def test_the_fetch_guard_refuses_loopback_unless_vetted_itself_is_local(docs):
    base, routes = docs
    routes["/c.json"] = (200, {}, document(base + "/c.json"))
    with pytest.raises(cimd.DocumentRefused, match="https"):
        cimd.fetch_document(base + "/c.json", cimd.Policy(allow_loopback_http=False))


def test_the_fetch_guard_refuses_http_to_a_public_host():
    with pytest.raises(cimd.DocumentRefused, match="https"):
        cimd.fetch_document("http://example.com/client.json", LOOPBACK_OK)


@pytest.mark.parametrize(
    "address", ["10.0.0.5", "192.168.1.20", "172.16.0.1", "169.254.169.254", "100.64.0.1", "::ffff:10.0.0.1", "fd00::1"]
)
def test_the_fetch_guard_refuses_names_resolving_to_private_addresses(monkeypatch, address):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(family, socket.SOCK_STREAM, 6, "", (address, 443))])
    with pytest.raises(cimd.DocumentRefused, match="resolves to"):
        cimd.fetch_document("https://innocent.example/client.json", LOOPBACK_OK)


def test_the_fetch_guard_checks_the_connected_address_too(monkeypatch, docs):
    """A resolver that says "public" but a connection that lands on a private
    address (what DNS rebinding does between check and use) is refused."""
    base, _routes = docs
    port = int(base.rsplit(":", 1)[1])
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
    )
    real = cimd._address_refusal
    calls = []

    def first_public_then_real(address, policy):
        calls.append(address)
        return None if len(calls) == 1 else real(address, cimd.Policy(allow_loopback_http=False))

    monkeypatch.setattr(cimd, "_address_refusal", first_public_then_real)
    with pytest.raises(cimd.DocumentRefused, match="connected to"):
        cimd.fetch_document("https://rebinding.example/client.json", LOOPBACK_OK)


def test_a_refused_document_is_reported_at_authorize(gw, docs):
    base, routes = docs
    url = base + "/bad.json"
    routes["/bad.json"] = (200, {}, document("https://someone-else.example/c.json"))
    _verifier, challenge = pkce()
    response = authorize(gw, url, challenge)
    assert response.status_code == 400 and "client_id must be exactly its own URL" in response.text


def test_a_token_for_the_rest_api_works_there_and_not_on_mcp(gw, site):
    client_id = register(gw)
    verifier, challenge = pkce()
    answer = allow(site, consent_url(gw, client_id, challenge, resource=BASE + "/api/v1"))
    token = exchange(gw, client_id, answer["code"], verifier, resource=BASE + "/api/v1").json()["access_token"]
    assert gw.request("GET", "/api/v1/records", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert gw.request("POST", "/mcp", headers={"Authorization": f"Bearer {token}"}, json={}).status_code == 401


def test_a_metadata_document_that_goes_away_keeps_refresh_working_but_not_new_sign_ins(gw, site, docs):
    base, routes = docs
    url = base + "/oauth/gone.json"
    routes["/oauth/gone.json"] = (200, {}, document(url))
    verifier, challenge = pkce()
    answer = allow(site, consent_url(gw, url, challenge))
    tokens = exchange(gw, url, answer["code"], verifier).json()
    routes.clear()
    OAuthClient.objects.update(fetched_at=None)  # the cache ran out
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": url}
    assert gw.request("POST", "/token", data=data).status_code == 200
    assert authorize(gw, url, challenge).status_code == 400
