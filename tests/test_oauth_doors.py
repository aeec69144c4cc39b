"""The OAuth endpoints answer anyone without credentials, so what they store
is bounded: new clients per address and in total per hour, the size and
count of every stored field, the Host header, and CORS on /register only for
origins the operator listed. In process, over the daemon's ASGI application."""

from __future__ import annotations

import json

import httpx2
import pytest

from reviews.models import AuditEvent
from reviews.oauth_models import MAX_REDIRECT_URI_CHARS, MAX_REDIRECT_URIS, OAuthClient
from tests.oauth_support import document_server, pkce
from tests.test_oauth import BASE, REDIRECT, Gateway

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gw():
    gateway = Gateway()
    yield gateway
    gateway.close()


def call(gw, method, path, *, address="203.0.113.10", **kwargs) -> httpx2.Response:
    async def go():
        transport = httpx2.ASGITransport(app=gw.app, client=(address, 40000))
        async with httpx2.AsyncClient(transport=transport, base_url=BASE) as http:
            response = await http.request(method, path, **kwargs)
            await response.aread()
            return response

    return gw.run(go())


def register(gw, address="203.0.113.10", **overrides) -> httpx2.Response:
    body = {"client_name": "Connector", "redirect_uris": [REDIRECT], **overrides}
    return call(gw, "POST", "/register", address=address, json=body)


def test_registrations_per_address_are_limited_per_hour(gw, settings):
    settings.VETTED_OAUTH_REGISTRATIONS_PER_ADDRESS = 3
    assert [register(gw).status_code for _ in range(3)] == [201] * 3
    refused = register(gw)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 3000
    assert "at most 3 an hour" in refused.json()["error_description"]
    assert register(gw, address="198.51.100.20").status_code == 201  # another address is not held back
    assert OAuthClient.objects.count() == 4
    assert AuditEvent.objects.filter(event_type="oauth.client_registered").count() == 4


def test_an_ipv6_slash_64_counts_as_one_address(gw, settings):
    settings.VETTED_OAUTH_REGISTRATIONS_PER_ADDRESS = 2
    assert register(gw, address="2001:db8:1:2::1").status_code == 201
    assert register(gw, address="2001:db8:1:2::2").status_code == 201
    assert register(gw, address="2001:db8:1:2:ffff::9").status_code == 429
    assert register(gw, address="2001:db8:1:3::1").status_code == 201


def test_registrations_in_total_are_limited_per_hour(gw, settings):
    settings.VETTED_OAUTH_REGISTRATIONS_PER_HOUR = 4
    assert [register(gw, address=f"203.0.113.{n}").status_code for n in range(1, 5)] == [201] * 4
    refused = register(gw, address="203.0.113.99")
    assert refused.status_code == 429 and "in total" in refused.json()["error_description"]


def test_first_seen_metadata_documents_count_against_the_same_limit(gw, settings):
    settings.VETTED_OAUTH_REGISTRATIONS_PER_ADDRESS = 2
    with document_server() as (base, routes):
        for n in range(3):
            url = f"{base}/c{n}.json"
            routes[f"/c{n}.json"] = (
                200,
                {"Content-Type": "application/json"},
                json.dumps({"client_id": url, "client_name": f"Doc {n}", "redirect_uris": [REDIRECT]}).encode(),
            )
        _verifier, challenge = pkce()

        def authorize(n):
            params = {
                "response_type": "code",
                "client_id": f"{base}/c{n}.json",
                "redirect_uri": REDIRECT,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": "s",
                "resource": BASE + "/mcp",
            }
            return call(gw, "GET", "/authorize", params=params)

        assert authorize(0).status_code == 302 and authorize(1).status_code == 302
        refused = authorize(2)
        assert refused.status_code == 429 and "at most 2 an hour" in refused.text
        assert authorize(0).status_code == 302  # a client already known is not a new one
    assert OAuthClient.objects.count() == 2


@pytest.mark.parametrize(
    ("overrides", "word"),
    [
        ({"redirect_uris": [f"http://127.0.0.1:{9000 + n}/cb" for n in range(MAX_REDIRECT_URIS + 1)]}, "at most"),
        ({"redirect_uris": ["http://127.0.0.1:9000/" + "a" * MAX_REDIRECT_URI_CHARS]}, "characters"),
        ({"software_id": "s" * 5000}, "software_id"),
    ],
)
def test_oversized_registrations_are_refused_and_nothing_is_stored(gw, overrides, word):
    response = register(gw, **overrides)
    assert response.status_code == 400 and word in response.json()["error_description"]
    assert not OAuthClient.objects.exists() and not AuditEvent.objects.exists()


def test_a_long_client_name_is_shortened_not_stored_whole(gw):
    assert register(gw, client_name="N" * 100_000).status_code == 201
    assert len(OAuthClient.objects.get().client_name) == 200


def test_registration_takes_json_only(gw):
    body = json.dumps({"client_name": "C", "redirect_uris": [REDIRECT]})
    response = call(gw, "POST", "/register", content=body, headers={"Content-Type": "text/plain"})
    assert response.status_code == 400 and "Content-Type: application/json" in response.json()["error_description"]
    assert not OAuthClient.objects.exists()


def test_a_page_on_another_origin_cannot_register(gw):
    preflight = call(
        gw,
        "OPTIONS",
        "/register",
        headers={
            "Origin": "https://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.headers.get("access-control-allow-origin") is None
    response = register(gw, address="203.0.113.10")
    assert "access-control-allow-origin" not in response.headers


def test_a_listed_origin_may_register_from_a_browser(settings):
    settings.VETTED_OAUTH_REGISTER_ORIGINS = ["http://localhost:6274"]
    gateway = Gateway()  # the CORS origins are read when the app is built
    try:
        preflight = call(
            gateway,
            "OPTIONS",
            "/register",
            headers={"Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST"},
        )
        assert preflight.headers["access-control-allow-origin"] == "http://localhost:6274"
    finally:
        gateway.close()


def test_the_metadata_stays_readable_from_any_origin(gw):
    response = call(gw, "GET", "/.well-known/oauth-authorization-server", headers={"Origin": "https://app.example"})
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/register"),
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/authorize"),
        ("POST", "/token"),
        ("POST", "/revoke"),
    ],
)
def test_every_oauth_endpoint_checks_the_host(gw, method, path):
    response = call(gw, method, path, headers={"Host": "rebound.evil.example"}, json={})
    assert response.status_code == 400 and "VETTED_ALLOWED_HOSTS" in response.json()["error_description"]
    assert not OAuthClient.objects.exists()


def test_a_foreign_host_registers_nothing_but_an_allowed_one_does(gw):
    assert register(gw).status_code == 201
    assert (
        call(gw, "GET", "/.well-known/oauth-authorization-server", headers={"Host": "localhost:8765"}).status_code
        == 200
    )
