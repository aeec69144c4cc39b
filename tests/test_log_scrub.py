"""No secret that can travel in a URL reaches a log line: agent tokens, feed
keys, OAuth code/state, the first-run setup code."""

from __future__ import annotations

import logging
import time

import pytest

from common.logscrub import REDACTED, SECRET_PARAMETERS, scrub
from tests.gateway_support import http


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            '"GET /api/v1/describe?token=vt_abc-DEF_123 HTTP/1.1" 401',
            f'"GET /api/v1/describe?token={REDACTED} HTTP/1.1" 401',
        ),
        ("/feed.ics?key=s3cr3t&format=ics", f"/feed.ics?key={REDACTED}&format=ics"),
        ("/oauth/callback?code=abc&state=xyz", f"/oauth/callback?code={REDACTED}&state={REDACTED}"),
        ("/setup/?code=0123456789abcdef", f"/setup/?code={REDACTED}"),
        ("/x?q=billing&Access_Token=t0k#frag", f"/x?q=billing&Access_Token={REDACTED}#frag"),
        ("/x?feed_secret=a;client_key=b", f"/x?feed_secret={REDACTED};client_key={REDACTED}"),
        ("Bearer vt_abcdefghijklmnop in a message", f"Bearer {REDACTED} in a message"),
        ("/records/vt_pasted_in_a_path/", f"/records/{REDACTED}/"),
        ("/search?q=tokens+and+keys&limit=8", "/search?q=tokens+and+keys&limit=8"),
    ],
)
def test_scrub_replaces_every_secret_and_keeps_the_rest(line, expected):
    assert scrub(line) == expected


def test_every_listed_parameter_is_scrubbed():
    for name in SECRET_PARAMETERS:
        assert scrub(f"/x?a=1&{name}=SECRET") == f"/x?a=1&{name}={REDACTED}", name


def test_records_of_every_logger_are_scrubbed_including_their_arguments(caplog):
    with caplog.at_level(logging.INFO):
        logging.getLogger("uvicorn.access").info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/api/v1/describe?token=vt_secret123", "1.1", 400
        )
        logging.getLogger("some.library").warning("Not Found: %(path)s", {"path": "/x?code=abc"})
    record = caplog.records[0]
    assert record.args[2] == f"/api/v1/describe?token={REDACTED}"  # uvicorn's formatter reads args one by one
    assert "vt_secret123" not in caplog.text and "code=abc" not in caplog.text


@pytest.mark.slow
def test_the_daemons_log_never_shows_a_secret_sent_in_a_url(gateway, agent_tokens):
    token = agent_tokens["claude-code"]
    secrets = {
        "token": token,
        "feed": "feedkey-7f3a9c",
        "code": "oauthcode-51d2",
        "state": "oauthstate-9e0b",
        "setup": "setupcode-c4a1",
    }
    urls = [
        f"/api/v1/describe?token={token}",
        f"/mcp?access_token={token}",
        f"/api/v1/records?key={secrets['feed']}",
        f"/accounts/login/?next=/&code={secrets['code']}&state={secrets['state']}",
        f"/setup/?code={secrets['setup']}",
        f"/nowhere/{token}/",
    ]
    for url in urls:
        http("GET", gateway.base + url)
    deadline = time.monotonic() + 10
    while gateway.log().count(REDACTED) < len(urls) and time.monotonic() < deadline:
        time.sleep(0.1)
    log = gateway.log()
    for name, secret in secrets.items():
        assert secret not in log, f"the {name} secret is in the daemon's log"
    assert f"/api/v1/describe?token={REDACTED}" in log and f"/setup/?code={REDACTED}" in log
