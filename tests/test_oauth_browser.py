"""OAuth end to end: a real daemon (`manage.py serve`), the MCP SDK's own
OAuth client (``mcp.client.auth.OAuthClientProvider``: discovery from the
401, dynamic registration, PKCE, the token exchange, refresh), and Chromium
playing the reviewer who signs in and consents on the site.

Playwright's async API runs in the same event loop as the SDK client: the
client's redirect handler opens the authorization URL in the page, and the
callback handler waits for the browser to reach the client's redirect URI
(intercepted by a Playwright route, as a native app's loopback listener
would receive it).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import secrets
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from reviews.models import AuditEvent
from reviews.oauth_models import OAuthGrant
from tests.gateway_support import free_port, running_daemon
from tests.oauth_support import document_server, pkce

CHROMIUM = Path("/usr/bin/chromium")
PASSWORD = "a-long-password-1"  # the reviewer fixture's
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 3}
DESKTOP = {"viewport": {"width": 1440, "height": 900}}

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skip(reason="/usr/bin/chromium is missing")]
else:
    pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def daemon(transactional_db, reviewer, tmp_path):
    # The test settings hash with MD5, which the daemon (production settings) does not accept.
    hasher = PBKDF2PasswordHasher()
    reviewer.password = hasher.encode(PASSWORD, hasher.salt(), iterations=1000)
    reviewer.save(update_fields=["password"])
    port = free_port()
    with running_daemon(tmp_path, port=port, VETTED_PUBLIC_URL=f"http://127.0.0.1:{port}") as running:
        yield running


class Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


class Reviewer:
    """Chromium as the reviewer: signs in when asked, consents, and hands the
    redirect back to the client."""

    def __init__(self, page, agent_name: str, scopes: list[str]):
        self.page = page
        self.agent_name = agent_name
        self.scopes = scopes
        self.callbacks: asyncio.Queue = asyncio.Queue()
        self.consent_seen = ""
        self.redirect_uri = ""
        self.shot = ""

    async def install(self):
        """A loopback listener as the client's redirect URI (RFC 8252 §7.3)."""
        loop = asyncio.get_running_loop()
        reviewer = self

        class Callback(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                url = reviewer.redirect_uri.rsplit("/", 1)[0] + self.path
                loop.call_soon_threadsafe(reviewer.callbacks.put_nowait, url)
                body = b"Signed in; you can close this tab."
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Callback)
        threading.Thread(target=self.listener.serve_forever, daemon=True).start()
        self.redirect_uri = f"http://127.0.0.1:{self.listener.server_address[1]}/callback"

    def close(self):
        self.listener.shutdown()

    async def sign_in_and_consent(self, url: str):
        page = self.page
        await page.goto(url)
        if "/accounts/login/" in page.url:
            await page.fill("input[name=username]", "rita")
            await page.fill("input[name=password]", PASSWORD)
            await page.click("button[type=submit]")
        try:
            await page.wait_for_selector("#oauth-consent")
        except Exception:
            raise AssertionError(f"no consent page at {page.url}: {(await page.inner_text('body'))[:800]}") from None
        self.consent_seen = await page.inner_text("main") if await page.query_selector("main") else await page.content()
        await page.fill("input[name=new_agent_name]", self.agent_name)
        for box in await page.query_selector_all("input[name=scopes]"):
            want = await box.get_attribute("value") in self.scopes
            if want != await box.is_checked():
                await box.click()
        if self.shot:
            await page.screenshot(path=self.shot, full_page=True)
        await page.click("#oauth-allow")

    async def callback(self) -> AuthorizationCodeResult:
        url = await asyncio.wait_for(self.callbacks.get(), 30)
        query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        self.last_code = query.get("code")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


async def _browser():
    from playwright.async_api import async_playwright

    playwright = await async_playwright().start()
    browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    return playwright, browser


def _metadata(redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="SDK Test Client",
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def test_the_sdk_client_signs_in_through_the_consent_page_and_works_until_revoked(daemon):
    async def go():
        playwright, browser = await _browser()
        try:
            context = await browser.new_context(**DESKTOP)
            page = await context.new_page()
            page.set_default_timeout(15_000)
            reviewer = Reviewer(page, "remote-claude", ["team"])
            await reviewer.install()
            storage = Memory()
            auth = OAuthClientProvider(
                daemon.mcp_url,
                _metadata(reviewer.redirect_uri),
                storage,
                redirect_handler=reviewer.sign_in_and_consent,
                callback_handler=reviewer.callback,
            )
            out: dict = {}
            async with httpx2.AsyncClient(auth=auth, timeout=60) as http:
                async with Client(streamable_http_client(daemon.mcp_url, http_client=http)) as client:
                    out["tools"] = [t.name for t in (await client.list_tools()).tools]
                    described = await client.call_tool("describe", {})
                    out["spaces"] = [s["slug"] for s in described.structured_content["spaces"]]
                    first_access = storage.tokens.access_token
                    # Make the client think its token expired: it refreshes before the next call.
                    auth.context.token_expiry_time = 1
                    found = await client.call_tool("search", {"query": "anything"})
                    out["search_error"] = found.is_error
                    out["rotated"] = storage.tokens.access_token != first_access
            out["consent"] = reviewer.consent_seen
            token = storage.tokens.access_token
            client_id = storage.client.client_id
            async with httpx2.AsyncClient(timeout=30) as raw:
                # The code the browser carried is spent: replaying it fails.
                replay = await raw.post(
                    daemon.base + "/token",
                    data={
                        "grant_type": "authorization_code",
                        "code": reviewer.last_code,
                        "redirect_uri": reviewer.redirect_uri,
                        "client_id": client_id,
                        "code_verifier": "x" * 50,
                    },
                )
                out["replay"] = (replay.status_code, replay.json().get("error"))
                revoked = await raw.post(daemon.base + "/revoke", data={"token": token, "client_id": client_id})
                out["revoke_status"] = revoked.status_code
                after = await raw.post(
                    daemon.mcp_url,
                    headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                )
                out["after"] = (after.status_code, after.headers.get("www-authenticate", ""))
            return out
        finally:
            reviewer.close()
            await browser.close()
            await playwright.stop()

    out = asyncio.run(go())
    assert "propose_context" in out["tools"] and "approve" not in " ".join(out["tools"])
    assert out["spaces"] == ["team"]
    assert "SDK Test Client" in out["consent"] and "never decide" in out["consent"]
    assert out["search_error"] is False and out["rotated"] is True
    assert out["replay"] == (400, "invalid_grant")
    assert out["revoke_status"] == 200
    assert out["after"][0] == 401 and "resource_metadata=" in out["after"][1]
    grant = OAuthGrant.objects.get()
    assert grant.agent.name == "remote-claude" and grant.revoked_at is not None
    events = set(AuditEvent.objects.values_list("event_type", flat=True))
    assert {
        "agent.created",
        "oauth.granted",
        "oauth.tokens_issued",
        "oauth.tokens_refreshed",
        "oauth.revoked",
    } <= events


def test_the_browser_sees_each_refusal(daemon):
    """Played by hand in the phone-sized browser: a redirect URI the client
    did not register, plain PKCE, another audience, a PKCE verifier that does
    not match, and metadata documents the fetch guard refuses."""
    docs = contextlib.ExitStack()  # the document server, until the browser is done
    doc_base, routes = docs.enter_context(document_server())
    routes["/moved.json"] = (302, {"Location": doc_base + "/c.json"}, b"")
    routes["/big.json"] = (200, {}, b"{" + b" " * 70_000 + b"}")

    async def go():
        playwright, browser = await _browser()
        results: dict = {}
        try:
            page = await (await browser.new_context(**PHONE)).new_page()
            page.set_default_timeout(15_000)
            reviewer = Reviewer(page, "phone-agent", ["personal"])
            reviewer.shot = str(Path(__file__).parent / "artifacts" / "oauth-consent-phone.png")
            await reviewer.install()
            async with httpx2.AsyncClient(timeout=30) as raw:
                registered = await raw.post(
                    daemon.base + "/register",
                    json={"client_name": "Hand Client", "redirect_uris": [reviewer.redirect_uri]},
                )
                client_id = registered.json()["client_id"]
                verifier, challenge = pkce()
                base = {
                    "response_type": "code",
                    "client_id": client_id,
                    "redirect_uri": reviewer.redirect_uri,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "state": "s",
                    "resource": daemon.mcp_url,
                }

                async def visit(**overrides):
                    await page.goto(daemon.base + "/authorize?" + urlencode({**base, **overrides}))
                    return page.url, await page.content()

                results["unregistered"] = await visit(redirect_uri="https://evil.example/cb")
                results["plain"] = await visit(code_challenge_method="plain")
                results["audience"] = await visit(resource="https://other.example/mcp")
                for name, doc in (
                    ("private", "https://10.1.2.3/client.json"),
                    ("http", "http://example.com/client.json"),
                    ("redirect", doc_base + "/moved.json"),
                    ("oversize", doc_base + "/big.json"),
                ):
                    results[name] = await visit(client_id=doc)
                # A real consent, then the wrong verifier at the token endpoint (the
                # refusals above that went back to the client are not its answer).
                reviewer.callbacks = asyncio.Queue()
                await reviewer.sign_in_and_consent(daemon.base + "/authorize?" + urlencode(base))
                result = await reviewer.callback()
                wrong = await raw.post(
                    daemon.base + "/token",
                    data={
                        "grant_type": "authorization_code",
                        "code": result.code,
                        "redirect_uri": reviewer.redirect_uri,
                        "client_id": client_id,
                        "code_verifier": secrets.token_urlsafe(48),
                    },
                )
                results["wrong_verifier"] = wrong.json()
        finally:
            reviewer.close()
            await browser.close()
            await playwright.stop()
        return results

    (Path(__file__).parent / "artifacts").mkdir(exist_ok=True)
    with docs:
        results = asyncio.run(go())
    url, text = results["unregistered"]
    assert "evil.example" not in urlsplit(url).netloc and "not registered" in text
    assert "error=invalid_request" in results["plain"][0]
    assert "error=invalid_target" in results["audience"][0]
    assert "private address" in results["private"][1]
    assert "https" in results["http"][1]
    assert "redirect" in results["redirect"][1]
    assert "larger than" in results["oversize"][1]
    assert results["wrong_verifier"]["error"] == "invalid_grant"
    assert json.dumps(results["wrong_verifier"]).count("code_verifier") == 1
