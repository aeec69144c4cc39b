"""Deployment settings: a team server behind a TLS reverse proxy
(deploy/README.md) passes `check --deploy` with the documented variables,
and the local default (plain http on 127.0.0.1) keeps working unchanged."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys

import pytest

from reviews.models import Agent
from tests.gateway_support import PROJECT, running_daemon
from tests.test_authorization_matrix import csrf_secret, fetch, session_cookie

pytestmark = pytest.mark.slow

PRODUCTION = {
    "VETTED_SECRET_KEY": secrets.token_urlsafe(60),
    "VETTED_ALLOWED_HOSTS": "memory.example.com",
    "VETTED_HTTPS": "1",
    "VETTED_BEHIND_PROXY": "1",
    "VETTED_DEBUG": "0",
}
MCP_INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "deploy", "version": "1"},
        },
    }
).encode()


def manage(tmp_path, *args, **env_vars):
    """`manage.py ARGS` with the plain settings and only the given VETTED_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VETTED_")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "memory_site.settings",
            "VETTED_HOME": str(tmp_path),
            "VETTED_EMBEDDER": "fake",
            **env_vars,
        }
    )
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_the_documented_production_variables(tmp_path):
    done = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "no issues" in output and not re.search(r"\bW\d{3}\b|WARNING", output), output


def test_check_deploy_still_flags_the_local_defaults_so_https_settings_are_opt_in(tmp_path):
    local = {k: v for k, v in PRODUCTION.items() if k not in ("VETTED_HTTPS", "VETTED_BEHIND_PROXY")}
    done = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **local)
    flagged = set(re.findall(r"security\.W\d{3}", done.stdout + done.stderr))
    assert done.returncode != 0
    # Secure cookies, HSTS and the https redirect stay off unless asked for.
    assert flagged == {"security.W004", "security.W008", "security.W012", "security.W016"}, flagged


@pytest.mark.parametrize(
    "name, value, says",
    [
        ("VETTED_HTTPS", "maybe", "is not a boolean"),
        ("VETTED_BEHIND_PROXY", "2", "is not a boolean"),
        ("VETTED_HSTS_SECONDS", "-5", "below the minimum"),
        ("VETTED_HSTS_SECONDS", "a year", "is not an integer"),
        ("VETTED_CSRF_TRUSTED_ORIGINS", "memory.example.com", "is not an origin"),
        ("VETTED_CSRF_TRUSTED_ORIGINS", "https://memory.example.com/inbox", "is not an origin"),
    ],
)
def test_a_bad_deployment_value_stops_the_process_naming_the_variable(tmp_path, name, value, says):
    done = manage(tmp_path, "check", **{**PRODUCTION, name: value})
    assert done.returncode != 0
    assert name in done.stderr and says in done.stderr, done.stderr[-800:]


def test_local_defaults_serve_plain_http_with_ordinary_cookies(gateway, transactional_db, reviewer):
    status, headers, page = fetch(gateway.base, "GET", "/accounts/login/")
    assert status == 200 and "csrfmiddlewaretoken" in page
    assert "secure" not in headers["set-cookie"].lower()
    assert "strict-transport-security" not in headers
    assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "same-origin"
    # A reviewer's session works over plain http, POSTs included.
    csrf = csrf_secret()
    cookie = f"sessionid={session_cookie(reviewer)}; csrftoken={csrf}"
    status, _, _ = fetch(gateway.base, "GET", "/", headers={"Cookie": cookie})
    assert status == 200
    status, _, page = fetch(
        gateway.base,
        "POST",
        "/agents/create",
        headers={"Cookie": cookie, "X-CSRFToken": csrf, "Content-Type": "application/x-www-form-urlencoded"},
        body=b"name=local-bot&spaces=team",
    )
    assert status == 200 and Agent.objects.filter(name="local-bot").exists()


def test_forwarded_headers_are_not_believed_without_a_proxy(gateway, transactional_db, reviewer):
    """Locally any process can send X-Forwarded-Proto; without
    VETTED_BEHIND_PROXY the daemon must not take the request for https
    (it would then hand out https URLs, e.g. in the connect blocks)."""
    csrf = csrf_secret()
    cookie = f"sessionid={session_cookie(reviewer)}; csrftoken={csrf}"
    status, _, page = fetch(
        gateway.base,
        "POST",
        "/agents/create",
        headers={
            "Cookie": cookie,
            "X-CSRFToken": csrf,
            "X-Forwarded-Proto": "https",
            "X-Forwarded-For": "203.0.113.9",
            "Content-Type": "application/x-www-form-urlencoded",
        },
        body=b"name=forwarded-bot&spaces=team",
    )
    assert status == 200, page[-500:]
    port = gateway.base.rsplit(":", 1)[1]
    assert f"http://127.0.0.1:{port}" in page and f"https://127.0.0.1:{port}" not in page


def test_a_daemon_behind_a_proxy_answers_its_public_host_and_refuses_others(agent_tokens, reviewer, tmp_path):
    env = {"VETTED_ALLOWED_HOSTS": "memory.example.com,127.0.0.1", "VETTED_HTTPS": "1", "VETTED_BEHIND_PROXY": "1"}
    token = agent_tokens["claude-code"]
    proxied = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}  # what Caddy adds
    mcp_headers = {
        **proxied,
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    with running_daemon(tmp_path, **env) as daemon:

        def mcp(**headers):
            return fetch(daemon.base, "POST", "/mcp", headers={**mcp_headers, **headers}, body=MCP_INITIALIZE)[0]

        def api(host):
            return fetch(
                daemon.base,
                "GET",
                "/api/v1/describe",
                headers={**proxied, "Host": host, "Authorization": f"Bearer {token}"},
            )[0]

        # /mcp: VETTED_ALLOWED_HOSTS drives the SDK's DNS-rebinding checks.
        assert mcp(Host="memory.example.com") == 200
        assert mcp(Host="memory.example.com", Origin="https://memory.example.com") == 200
        assert mcp(Host="evil.example.com") == 421
        assert mcp(Host="memory.example.com", Origin="https://evil.example.com") == 403
        # /api: Django's ALLOWED_HOSTS.
        assert api("memory.example.com") == 200
        assert api("evil.example.com") == 400

        # The site over the proxy: HSTS, secure cookies.
        status, headers, _ = fetch(
            daemon.base, "GET", "/accounts/login/", headers={**proxied, "Host": "memory.example.com"}
        )
        assert status == 200
        assert headers["strict-transport-security"] == "max-age=31536000; includeSubDomains"
        assert "secure" in headers["set-cookie"].lower()
        # Plain http that bypasses the proxy is sent to https; /health is exempt for monitoring.
        status, headers, _ = fetch(daemon.base, "GET", "/accounts/login/", headers={"Host": "memory.example.com"})
        assert status == 301 and headers["location"] == "https://memory.example.com/accounts/login/"
        assert fetch(daemon.base, "GET", "/health")[0] == 200

        # A reviewer's form POST from the public origin passes CSRF without
        # VETTED_CSRF_TRUSTED_ORIGINS; one from another origin does not.
        csrf = csrf_secret()
        form = {
            **proxied,
            "Host": "memory.example.com",
            "X-CSRFToken": csrf,
            "Cookie": f"sessionid={session_cookie(reviewer)}; csrftoken={csrf}",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        status, _, _ = fetch(
            daemon.base,
            "POST",
            "/agents/create",
            headers={**form, "Origin": "https://evil.example.com"},
            body=b"name=evil-bot&spaces=team",
        )
        assert status == 403 and not Agent.objects.filter(name="evil-bot").exists()
        status, _, _ = fetch(
            daemon.base,
            "POST",
            "/agents/create",
            headers={**form, "Origin": "https://memory.example.com"},
            body=b"name=proxied-bot&spaces=team",
        )
        assert status == 200 and Agent.objects.filter(name="proxied-bot").exists()
