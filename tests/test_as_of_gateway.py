"""as_of and valid_at over MCP (streamable HTTP, the real daemon) and REST:
the history of tests/test_as_of.py, built on a controlled clock in this
process and committed, then looked back on through the agent's transports."""

from __future__ import annotations

import pytest

from reviews.models import Agent
from tests.gateway_support import http
from tests.mcp_client import call, text_of
from tests.test_as_of import HOST_BODY, NEW_BODY, OLD_BODY, QUERY, build_history

pytestmark = pytest.mark.slow


def structured(result) -> dict:
    assert not result.is_error, text_of(result)
    return result.structured_content


def test_search_read_and_list_as_of_over_mcp_and_rest(gateway, agent_tokens, reviewer):
    past = build_history(reviewer, Agent.objects.get(name="claude-code"))
    token = agent_tokens["claude-code"]

    def mcp(tool, **arguments):
        return structured(call(gateway.mcp_url, token, tool, arguments))

    early = mcp("search", query=QUERY, mode="keyword", as_of="2026-03-03")
    assert early["as_of"].startswith("2026-03-03") and early["results"][0]["body"] == OLD_BODY
    disputed = mcp("search", query=QUERY, mode="keyword", as_of="2026-03-09")
    assert past.v2.public_id not in str(disputed["results"]) and disputed["withheld"].get("disputed") == 1
    assert mcp("read", id=past.v2.public_id, as_of="2026-03-11")["record"]["body"] == NEW_BODY
    assert mcp("read", id=past.host.public_id, as_of="2026-03-13")["withheld"] == "edited"
    listed = mcp("list", as_of="2026-03-11T12:00:00Z")
    assert {r["id"] for r in listed["records"]} >= {past.v2.public_id, past.host.public_id}
    assert HOST_BODY in str(listed) and "attacker" not in str(listed)
    refused = call(gateway.mcp_url, token, "search", {"query": QUERY, "as_of": "2999-01-01"})
    assert refused.is_error and "as_of" in text_of(refused) and "in the future" in text_of(refused)

    status, _headers, body = http(
        "GET", f"{gateway.base}/api/v1/records/{past.v1.public_id}?as_of=2026-03-06", token=token
    )
    assert status == 200 and body["withheld"] == "superseded" and body["current_version"] == past.v2.public_id
    query = "q=billing+deploy+window&mode=keyword&valid_at=2026-07-01&as_of=2026-03-11"
    status, _headers, body = http("GET", f"{gateway.base}/api/v1/search?{query}", token=token)
    assert status == 200 and past.summer.public_id in str(body["results"])
