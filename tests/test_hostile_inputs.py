"""Hostile input through both agent transports, against the real daemon:
MCP with the official client (and raw JSON-RPC where the client itself
would refuse to send the bytes) and REST.

Every case must end in a clear refusal (HTTP 4xx with a message, an MCP
tool error, or a JSON-RPC error), never a 5xx or a hang, and must leave no
trace: no proposal, record or write-log row. The one exception is HTML and
script in a proposal's body, which is valid text: it is stored verbatim as
a proposal, and the inbox must show it inert.
"""

from __future__ import annotations

import asyncio
import http.client as httplib
import json
import re
from html.parser import HTMLParser
from urllib.parse import quote, urlsplit

import pytest

from reviews import actions
from reviews.models import AuditEvent, Proposal, Record
from tests.conftest import GOOD_BODY
from tests.gateway_support import http
from tests.mcp_client import call, over_http, text_of
from tests.test_authorization_matrix import session_cookie

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gateway(django_db_setup, django_db_blocker, tmp_path_factory):
    """The real daemon without the read limit: these tests send far more
    searches a second than an agent may (the limit has its own tests in
    tests/test_agent_limits.py)."""
    from tests.gateway_support import running_daemon

    with running_daemon(tmp_path_factory.mktemp("hostile-daemon"), VETTED_READS_PER_MINUTE="0") as daemon:
        yield daemon


API = "/api/v1"
REASON = "Seen in the team handbook today"
PROPOSAL = {
    "title": "Billing API repository",
    "body": GOOD_BODY,
    "kind": "fact",
    "space": "team",
    "tags": ["billing"],
    "reason": REASON,
}
ONE_MB = 1024 * 1024


def trace() -> tuple[int, int, int]:
    return Proposal.objects.count(), Record.objects.count(), AuditEvent.objects.count()


def assert_refused(status: int, data, *, allowed=(400, 404, 413, 415)) -> None:
    assert status in allowed, (status, data)
    assert isinstance(data, dict) and data.get("error") and data.get("message"), data


def api(gateway, method, path, token, **kwargs):
    return http(method, gateway.base + API + path, token=token, **kwargs)


def raw_request(
    base: str,
    method: str,
    path: str,
    *,
    headers: dict,
    body: bytes | None = None,
    chunks: list[bytes] | None = None,
    timeout: float = 30,
):
    """A request with exactly these bytes (chunked when ``chunks`` is given)."""
    target = urlsplit(base)
    conn = httplib.HTTPConnection(target.hostname, target.port, timeout=timeout)
    try:
        if chunks is not None:
            conn.putrequest(method, path)
            for name, value in {**headers, "Transfer-Encoding": "chunked"}.items():
                conn.putheader(name, value)
            conn.endheaders()
            for chunk in chunks:
                try:
                    conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                except (BrokenPipeError, ConnectionResetError):
                    break  # the server answered early and closed: read the answer
            else:
                conn.send(b"0\r\n\r\n")
        else:
            conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


class RawMcp:
    """A bare MCP session over HTTP: initialize, then post any bytes."""

    def __init__(self, gateway, token: str):
        self.base, self.token, self.session = gateway.base, token, None
        status, headers, body = self.post(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "hostile", "version": "1"},
                    },
                }
            ).encode()
        )
        assert status == 200, body
        self.session = headers["mcp-session-id"]
        self.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def post(self, raw: bytes):
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
            headers["Mcp-Protocol-Version"] = "2025-06-18"
        return raw_request(self.base, "POST", "/mcp", headers=headers, body=raw)


def jsonrpc_messages(body: bytes) -> list[dict]:
    """The JSON-RPC messages in a plain JSON or an SSE answer."""
    text = body.decode("utf-8", "replace")
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]


def assert_mcp_refused(status: int, body: bytes) -> str:
    """A 4xx, or a 200 carrying a JSON-RPC error or a tool error; returns its message."""
    assert status < 500, (status, body[:300])
    if status >= 400:
        data = json.loads(body) if body.strip().startswith(b"{") else {}
        message = data.get("message") or (data.get("error") or {}).get("message") or body.decode("utf-8", "replace")
        assert message.strip(), body
        return message
    (message,) = [m for m in jsonrpc_messages(body) if "id" in m]
    if "error" in message:
        assert message["error"]["message"], message
        return message["error"]["message"]
    result = message["result"]
    assert result.get("isError"), message
    return "".join(block.get("text", "") for block in result["content"])


def mcp_call_with_deadline(gateway, token, tool, arguments, seconds=60):
    """An official-client tool call that must finish (refused or answered)
    within ``seconds``; returns the result, or the exception the client raised."""

    async def go(client):
        return await asyncio.wait_for(client.call_tool(tool, arguments), seconds)

    try:
        return over_http(gateway.mcp_url, token, go)
    except TimeoutError:
        raise AssertionError(f"{tool} hung for {seconds} s") from None
    except Exception as exc:  # noqa: BLE001 - the client's way of reporting an HTTP refusal
        return exc


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


CONTROL = {"NUL": "\x00", "ESC": "\x1b", "RTL override": "\u202e", "C1 NEL": "\x85", "bidi isolate": "\u2067"}
FTS_QUERIES = [
    "billing NEAR(",
    "NEAR(billing repository",
    '"billing',
    'billing"',
    "*",
    "bill*",
    "* billing",
    "billing AND OR NOT",
    "AND",
    "NOT billing",
    "OR",
    "^billing",
    "title:billing",
    "body:",
    "col:x",
    "{title body}: billing",
    "(",
    ")",
    "billing -repository",
    "+",
    "'",
    '"',
    '""',
    "''",
]
SQL = "'; DROP TABLE reviews_record; --"
HOSTILE_IDS = [
    "../",
    "../../etc/passwd",
    "%2e%2e%2f",
    "..%2f..%2fetc%2fpasswd",
    "rec_\x00",
    "rec_%00",
    "rec_0123456789ab\x00",
    SQL,
    "rec_" + "9" * 5000,
    "rec_\u202e",
]


# --------------------------------------------------------------------------- sizes


def test_rest_refuses_a_one_megabyte_body_even_when_chunked(gateway, agent_tokens):
    before = trace()
    big = json.dumps({**PROPOSAL, "body": "word " * (ONE_MB // 5)}).encode()
    headers = {"Authorization": f"Bearer {agent_tokens['claude-code']}", "Content-Type": "application/json"}
    status, _, body = raw_request(gateway.base, "POST", API + "/proposals", headers=headers, body=big)
    assert_refused(status, json.loads(body), allowed=(413,))
    # No Content-Length to check first: the guard counts the chunks as they come.
    pieces = [big[i : i + 65536] for i in range(0, len(big), 65536)]
    status, _, body = raw_request(gateway.base, "POST", API + "/proposals", headers=headers, chunks=pieces)
    assert status == 413 and "262144" in json.loads(body)["message"]
    assert trace() == before


def test_mcp_refuses_a_one_megabyte_body_without_hanging(gateway, agent_tokens):
    before = trace()
    outcome = mcp_call_with_deadline(
        gateway, agent_tokens["claude-code"], "propose_context", {**PROPOSAL, "body": "word " * (ONE_MB // 5)}
    )
    # The official client turns the guard's 413 into an MCP error of its own
    # (it drops our message, which the raw request below shows); what matters
    # is that the call ends, refused.
    if isinstance(outcome, Exception):
        assert re.search(r"413|too large|262144|error response", repr(outcome), re.I), repr(outcome)
    else:
        assert outcome.is_error and "262144" in text_of(outcome)
    # The bytes a client would send, answered by the guard with the limit stated.
    session = RawMcp(gateway, agent_tokens["claude-code"])
    status, _, body = session.post(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "propose_context", "arguments": {**PROPOSAL, "body": "x" * ONE_MB}},
            }
        ).encode()
    )
    assert status == 413 and "262144" in json.loads(body)["message"]
    assert trace() == before


def test_a_record_body_just_over_20000_characters_is_refused_by_field(gateway, agent_tokens):
    before = trace()
    long_body = (GOOD_BODY + " ") * (20_001 // len(GOOD_BODY) + 1)
    status, _, data = api(
        gateway, "POST", "/proposals", agent_tokens["claude-code"], body={**PROPOSAL, "body": long_body}
    )
    assert_refused(status, data, allowed=(400,))
    assert "at most 20000" in data["fields"]["body"]
    result = call(gateway.mcp_url, agent_tokens["claude-code"], "propose_context", {**PROPOSAL, "body": long_body})
    assert result.is_error and "at most 20000" in text_of(result)
    assert trace() == before


def test_ten_thousand_tags_are_refused_with_the_limit(gateway, agent_tokens):
    before = trace()
    tags = [f"t{n}" for n in range(10_000)]
    status, _, data = api(gateway, "POST", "/proposals", agent_tokens["claude-code"], body={**PROPOSAL, "tags": tags})
    assert_refused(status, data, allowed=(400,))
    assert "at most 20" in data["fields"]["tags"]
    result = call(gateway.mcp_url, agent_tokens["claude-code"], "propose_context", {**PROPOSAL, "tags": tags})
    assert result.is_error and "at most 20" in text_of(result)
    status, _, data = api(
        gateway, "GET", "/search?q=billing&tags=" + ",".join(tags[:3000]), agent_tokens["claude-code"]
    )
    # Too many tags to filter by is refused by field; a harmless filter just matches nothing.
    assert (status == 400 and "tags" in data["fields"]) or (status == 200 and data["results"] == []), (status, data)
    assert trace() == before


# --------------------------------------------------------------------------- malformed bytes


def test_rest_refuses_ten_thousand_levels_of_nested_json(gateway, agent_tokens):
    before = trace()
    for raw in (
        deep(10_000).encode(),
        ('{"title": ' + deep(10_000) + "}").encode(),
        ('{"a":' * 10_000 + "1" + "}" * 10_000).encode(),
    ):
        status, _, data = api(
            gateway,
            "POST",
            "/proposals",
            agent_tokens["claude-code"],
            raw=raw,
            headers={"Content-Type": "application/json"},
        )
        assert_refused(status, data, allowed=(400,))
        assert "JSON" in data["message"] or "JSON" in str(data.get("fields")), data
    assert trace() == before


def test_mcp_refuses_ten_thousand_levels_of_nested_json(gateway, agent_tokens):
    before = trace()
    session = RawMcp(gateway, agent_tokens["claude-code"])
    nested = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "propose_context", '
        '"arguments": {"title": ' + deep(10_000) + "}}}"
    ).encode()
    assert_mcp_refused(*session.post(nested)[::2])
    assert_mcp_refused(*session.post(deep(10_000).encode())[::2])
    # The session still works afterwards.
    status, _, body = session.post(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode())
    assert status == 200 and "propose_context" in body.decode()
    assert trace() == before


def test_invalid_utf8_is_refused_on_both_transports(gateway, agent_tokens):
    before = trace()
    raw = (
        b'{"title": "Billing \xff\xfe API", "body": "' + GOOD_BODY.encode() + b'", "kind": "fact", '
        b'"space": "team", "reason": "' + REASON.encode() + b'"}'
    )
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        agent_tokens["claude-code"],
        raw=raw,
        headers={"Content-Type": "application/json"},
    )
    assert_refused(status, data, allowed=(400,))
    assert "JSON" in data["message"] or "utf" in data["message"].lower()

    session = RawMcp(gateway, agent_tokens["claude-code"])
    message = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "propose_context", '
        b'"arguments": ' + raw + b"}}"
    )
    assert_mcp_refused(*session.post(message)[::2])
    # Invalid UTF-8 in a query string, percent-encoded.
    status, _, data = api(gateway, "GET", "/search?q=%ff%fe%fd", agent_tokens["claude-code"])
    assert status in (200, 400), (status, data)
    assert trace() == before


# --------------------------------------------------------------------------- control characters


@pytest.mark.parametrize("name", CONTROL)
def test_control_characters_in_titles_bodies_and_reasons_are_refused_by_field(gateway, agent_tokens, name):
    char = CONTROL[name]
    token = agent_tokens["claude-code"]
    before = trace()
    for field, value in (
        ("title", f"Billing{char} API repository"),
        ("body", GOOD_BODY.replace("lives", f"lives{char}")),
        ("reason", f"Seen in{char} the team handbook"),
    ):
        status, _, data = api(gateway, "POST", "/proposals", token, body={**PROPOSAL, field: value})
        assert_refused(status, data, allowed=(400,))
        assert "control character U+" in data["fields"][field], (name, field, data)
        result = call(gateway.mcp_url, token, "propose_context", {**PROPOSAL, field: value})
        assert result.is_error and "[invalid]" in text_of(result) and "control character U+" in text_of(result)
    assert trace() == before


def test_control_characters_in_queries_are_dropped_and_a_query_of_nothing_else_is_refused(
    gateway, agent_tokens, make_record
):
    record = make_record()
    token = agent_tokens["claude-code"]
    before = trace()
    for char in ("\x00", "\x1b", "\x7f"):
        status, _, data = api(gateway, "GET", "/search?mode=keyword&q=" + quote(f"billing{char}repository"), token)
        assert status == 200 and [hit["id"] for hit in data["results"]] == [record.public_id], (repr(char), data)
        result = call(gateway.mcp_url, token, "search", {"query": f"billing{char}repository", "mode": "keyword"})
        assert not result.is_error and record.public_id in text_of(result)
    status, _, data = api(gateway, "GET", "/search?q=" + quote("\x00\x1b\x07"), token)
    assert_refused(status, data, allowed=(400,))
    assert "query" in data["fields"]
    result = call(gateway.mcp_url, token, "search", {"query": "\x00\x1b"})
    assert result.is_error and "query" in text_of(result)
    status, _, data = api(gateway, "GET", "/search?q=" + quote("\u202ebilling"), token)
    assert status == 200  # a bidi override in a query cannot deceive anyone: it is only searched
    assert trace() == before


# --------------------------------------------------------------------------- query syntax


def test_fts_operators_and_sql_in_queries_are_searched_as_text(gateway, agent_tokens, make_record):
    record = make_record()
    token = agent_tokens["claude-code"]
    before = trace()
    for query in [*FTS_QUERIES, SQL, "billing' OR 1=1 --", 'billing"; SELECT * FROM reviews_agent; --']:
        for mode in ("keyword", "hybrid"):
            status, _, data = api(gateway, "GET", "/search?" + f"mode={mode}&q=" + quote(query, safe=""), token)
            assert status == 200 or (status == 400 and data["fields"].get("query")), (query, mode, status, data)
            if status == 200:
                assert isinstance(data["results"], list)
        result = call(gateway.mcp_url, token, "search", {"query": query, "mode": "keyword"})
        assert not result.is_error or "query" in text_of(result), (query, text_of(result))
    # The operators did not hide the words around them, and nothing was dropped.
    status, _, data = api(gateway, "GET", "/search?mode=keyword&q=" + quote("billing NEAR( repository*"), token)
    assert [hit["id"] for hit in data["results"]] == [record.public_id]
    assert Record.objects.filter(public_id=record.public_id).exists()
    assert trace() == before


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize("hostile", HOSTILE_IDS, ids=lambda h: repr(h[:30]))
def test_hostile_ids_are_refused_by_every_mcp_tool_that_takes_one(gateway, agent_tokens, hostile):
    token = agent_tokens["claude-code"]
    before = trace()

    async def every_tool(client):
        return [
            await client.call_tool(tool, args)
            for tool, args in (
                ("read", {"id": hostile}),
                ("proposal_status", {"id": hostile}),
                ("dispute", {"id": hostile, "reason": "It is wrong now"}),
                ("propose_retirement", {"id": hostile, "reason": "It is gone now"}),
                ("propose_context", {**PROPOSAL, "revises": hostile}),
            )
        ]

    for result in over_http(gateway.mcp_url, token, every_tool):
        text = text_of(result)
        # A refusal by our validation ([invalid], [not_found]) or by the tool's
        # declared input schema (at most 40 characters), never a crash.
        assert result.is_error and ("[invalid]" in text or "[not_found]" in text or "at most 40 characters" in text), (
            text[:300]
        )
        assert "Traceback" not in text and "/etc/passwd" not in text.replace(hostile, "")
    assert trace() == before


@pytest.mark.parametrize(
    "path",
    [
        "/records/%2e%2e%2f",
        "/records/%2e%2e%2fdescribe",
        "/records/..%2f..%2fdescribe",
        "/records/%2e%2e/%2e%2e/describe",
        "/records/rec_%00/dispute",
        "/proposals/%00",
        "/records/%252e%252e%252f",
        "/records/" + quote(SQL, safe=""),
        "/records/%E2%80%AE",
    ],
)
def test_hostile_ids_in_rest_paths_are_refused(gateway, agent_tokens, path):
    before = trace()
    method = "POST" if path.endswith("/dispute") else "GET"
    status, _, data = api(
        gateway,
        method,
        path,
        agent_tokens["claude-code"],
        body={"reason": "It is wrong now"} if method == "POST" else None,
    )
    assert_refused(status, data, allowed=(400, 404))
    assert trace() == before


# --------------------------------------------------------------------------- markup


SCRIPTED = (
    "The billing runbook says to page the on-call engineer before any deploy of the billing service.\n\n"
    "<script>alert('proposal-xss')</script>\n\n"
    "[the runbook](javascript:alert('link-xss')) and <a href=\"javascript:alert('a-xss')\">the wiki</a>\n\n"
    '<img src=x onerror="alert(\'img-xss\')"> <iframe src="https://evil.example.com"></iframe>\n\n'
    "<svg onload=alert('svg-xss')></svg> [data link](data:text/html;base64,PHNjcmlwdD4=)"
)


class PageParts(HTMLParser):
    """What a browser would act on: real tags, their attributes, script text."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list = []
        self.attributes: list = []
        self.scripts: list = []
        self._in_script = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def assert_inert(page: str, where: str) -> None:
    parts = PageParts(page)
    assert not any("-xss" in script for script in parts.scripts), where
    for tag, name, value in parts.attributes:
        assert not name.startswith("on") or "-xss" not in value, (where, tag, name, value)
        if name in ("href", "src", "action", "formaction", "data"):
            assert not re.match(r"\s*(javascript|data|vbscript):", value, re.I), (where, tag, name, value)
    assert "iframe" not in parts.tags, where
    # The only SVG allowed is the site's own chart (the activity strip), drawn by
    # inbox/charts.py from numbers: every <svg> must be one of those.
    charts = sum(1 for tag, name, value in parts.attributes if tag == "svg" and name == "class" and "chart" in value)
    assert parts.tags.count("svg") == charts, where
    assert not any(value.startswith("x") and tag == "img" for tag, _n, value in parts.attributes), where


def test_script_in_a_proposal_is_stored_verbatim_and_the_inbox_renders_it_inert(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    title = "Billing runbook <script>alert('title-xss')</script>"
    status, _, data = api(gateway, "POST", "/proposals", token, body={**PROPOSAL, "title": title, "body": SCRIPTED})
    assert status == 201, data
    proposal = Proposal.objects.get(public_id=data["proposal_id"])
    assert proposal.body == SCRIPTED and proposal.title == title  # verbatim: what the agent sent

    cookie = {"Cookie": f"sessionid={session_cookie(reviewer)}"}
    for path in ("/", f"/proposals/{proposal.public_id}/revise"):
        status, _, page = http("GET", gateway.base + path, headers=cookie)
        assert status == 200 and proposal.public_id in page, path
        assert "proposal-xss" in page and "link-xss" in page  # shown, as text
        assert_inert(page, path)
    # Accepted as it is, the record page shows it just as inertly.
    record = actions.accept_proposal(proposal, actor=reviewer).result_record
    status, _, page = http("GET", gateway.base + f"/records/{record.public_id}/", headers=cookie)
    assert status == 200 and "proposal-xss" in page
    assert_inert(page, "record page")
