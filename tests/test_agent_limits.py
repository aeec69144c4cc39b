"""One agent must not be able to lock out the reviewer or the other agents:
MCP sessions per agent (bound to the agent that opened them), new sessions
per minute, reads per minute, and open disputes per agent (with a warning
for the reviewer when one agent disputes many records at once).
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import httpx2
import pytest
from django.test import override_settings
from django.utils import timezone

from mcp_bridge import agent_api
from reviews import actions
from reviews.errors import LimitReached, RateLimited
from reviews.models import AuditEvent, Proposal, RecordStatus
from tests.conftest import GOOD_BODY
from tests.gateway_support import running_daemon
from tests.mcp_client import text_of

HANDSHAKE = "2025-11-25"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
DESCRIBE = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "describe", "arguments": {}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def records(make_record, n: int) -> list:
    return [make_record(title=f"Deploy fact number {i}", body=f"{GOOD_BODY} Variant {i}.") for i in range(n)]


# --------------------------------------------------------------------------- the limiter


@override_settings(VETTED_READS_PER_MINUTE=3)
def test_sliding_window_refuses_past_the_limit_says_when_to_retry_and_counts_per_agent(agent, team_agent):
    limiter = agent_api.SlidingWindowLimiter("VETTED_READS_PER_MINUTE", "make", "reads")
    for t in (0.0, 10.0, 20.0):
        limiter.hit(agent, now=t)
    with pytest.raises(RateLimited) as refused:
        limiter.hit(agent, now=30.0)
    assert refused.value.retry_after == 30
    assert "3 reads per minute (VETTED_READS_PER_MINUTE); retry in 30 s" in refused.value.message
    limiter.hit(team_agent, now=30.0)  # another agent has its own window
    with pytest.raises(RateLimited):  # a refused call is not counted ...
        limiter.hit(agent, now=59.0)
    limiter.hit(agent, now=60.5)  # ... so the first call's expiry makes room
    with pytest.raises(RateLimited) as again:
        limiter.hit(agent, now=61.0)
    assert again.value.retry_after == 9


@override_settings(VETTED_READS_PER_MINUTE=600)
def test_the_read_limit_cannot_be_spent_in_one_burst(agent):
    limiter = agent_api.read_limiter
    limiter.reset()
    for n in range(60):
        limiter.hit(agent, now=n / 100)
    with pytest.raises(RateLimited) as refused:
        limiter.hit(agent, now=1.0)
    assert refused.value.retry_after == 5  # the first call leaves the 6 s window at 6.0
    assert "600 reads per minute, at most 60 in any 6 s" in refused.value.message
    for n in range(480):  # nine calls a second for the rest of the minute all get through
        limiter.hit(agent, now=6.1 + n * 0.11)


@override_settings(VETTED_READS_PER_MINUTE=0)
def test_a_limit_of_zero_turns_the_limiter_off(agent):
    limiter = agent_api.SlidingWindowLimiter("VETTED_READS_PER_MINUTE", "make", "reads")
    for _ in range(10_000):
        limiter.hit(agent, now=1.0)


# --------------------------------------------------------------------------- reads over REST


@pytest.mark.django_db
def test_every_read_counts_and_past_the_limit_rest_answers_429_with_retry_after(client, reviewer, make_record):
    agent, token = actions.create_agent("reader", spaces=["team"], actor=reviewer)
    other, other_token = actions.create_agent("bystander", spaces=["team"], actor=reviewer)
    record = make_record()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    reads = [
        "/api/v1/describe",
        "/api/v1/search?q=billing",
        "/api/v1/records",
        f"/api/v1/records/{record.public_id}",
        "/api/v1/proposals/prop_000000000000",
        "/api/v1/quality",
    ]
    with override_settings(VETTED_READS_PER_MINUTE=len(reads)):
        for url in reads:
            assert client.get(url, **auth).status_code in (200, 404), url
        refused = client.get("/api/v1/search?q=billing", **auth)
        assert refused.status_code == 429
        data = refused.json()
        retry = int(refused["Retry-After"])
        assert data["error"] == "rate_limited" and data["retry_after"] == retry and 1 <= retry <= 60
        assert f"retry in {retry} s" in data["message"] and "VETTED_READS_PER_MINUTE" in data["message"]
        assert f"{len(reads)} reads per minute" in data["message"]
        # Another agent is not affected, and writes have their own limit.
        assert client.get("/api/v1/search?q=billing", HTTP_AUTHORIZATION=f"Bearer {other_token}").status_code == 200
        dispute = client.post(
            f"/api/v1/records/{record.public_id}/dispute",
            {"reason": "It moved to GitLab in May."},
            content_type="application/json",
            **auth,
        )
        assert dispute.status_code == 201


@override_settings(VETTED_READS_PER_MINUTE=2)
def test_a_refused_agents_next_reads_are_answered_before_django(agent_tokens, reviewer):
    """The guard in front of /api/ answers a just-refused token itself, so a
    flood of refused calls never reaches the token lookup: shown by revoking
    the agent, which Django would answer with 401."""
    from memory_site.asgi import build_application

    app = build_application()
    token, other = agent_tokens["claude-code"], agent_tokens["team-bot"]

    async def go():
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:

            def get(t):
                return http.get("/api/v1/search", params={"q": "billing"}, headers={"Authorization": f"Bearer {t}"})

            answers = [await get(token) for _ in range(3)]
            await asyncio.to_thread(actions.revoke_agent, "claude-code", actor=reviewer)
            answers.append(await get(token))
            answers.append(await get(other))
            answers.append(await http.get("/api/v1/schema", headers={"Authorization": f"Bearer {token}"}))
            return answers

    *mine, theirs, schema = asyncio.run(go())
    assert [r.status_code for r in mine] == [200, 200, 429, 429]
    early = mine[3].json()
    assert early["error"] == "rate_limited" and int(mine[3].headers["retry-after"]) == early["retry_after"]
    assert early["message"].split("; retry in")[0] == mine[2].json()["message"].split("; retry in")[0]
    assert theirs.status_code == 200 and schema.status_code == 200  # the public schema is no agent read


@override_settings(VETTED_READS_PER_MINUTE=1)
def test_the_early_refusal_ends_when_the_window_allows_again(agent):
    limiter = agent_api.SlidingWindowLimiter("VETTED_READS_PER_MINUTE", "make", "reads")
    limiter.hit(agent, now=0.0)
    with pytest.raises(RateLimited):
        limiter.hit(agent, now=1.0)
    assert limiter.refusing(agent.token_digest, now=30.0).retry_after == 30
    assert limiter.refusing("0" * 64, now=30.0) is None
    assert limiter.refusing(agent.token_digest, now=60.0) is None
    limiter.hit(agent, now=60.0)


@pytest.mark.django_db
def test_describe_tells_the_agent_its_limits(agent, make_record):
    record = make_record()
    actions.dispute_record(record, agent=agent, reason="The repository moved.")
    with override_settings(
        VETTED_READS_PER_MINUTE=123,
        VETTED_OPEN_DISPUTES_PER_AGENT=7,
        VETTED_MCP_SESSIONS_PER_AGENT=5,
        VETTED_MCP_INITIALIZE_PER_MINUTE=9,
    ):
        data = agent_api.describe(agent)
    limits = data["limits"]
    assert limits["reads_per_minute"] == 123 and limits["proposals_per_minute"] == 60
    assert limits["open_disputes"] == 7 and limits["open_disputes_yours"] == 1
    assert limits["mcp_sessions"] == 5 and limits["mcp_sessions_opened_per_minute"] == 9
    assert "at most 7 open" in data["write_rules"]["disputes"] and "you have 1" in data["write_rules"]["disputes"]


# --------------------------------------------------------------------------- disputes


@pytest.mark.django_db
def test_an_agent_cannot_hold_more_open_disputes_than_the_cap(agent, team_agent, reviewer, make_record):
    first, second, third = records(make_record, 3)
    with override_settings(VETTED_OPEN_DISPUTES_PER_AGENT=2):
        held = [actions.dispute_record(r, agent=agent, reason="It is out of date.") for r in (first, second)]
        events = AuditEvent.objects.count()
        with pytest.raises(LimitReached) as refused:
            actions.dispute_record(third, agent=agent, reason="It is out of date.")
        message = refused.value.message
        assert "2 open disputes" in message and "VETTED_OPEN_DISPUTES_PER_AGENT=2" in message
        assert "a reviewer must decide some" in message
        assert refused.value.code == "limit_reached"
        third.refresh_from_db()
        assert third.status == RecordStatus.APPROVED  # still delivered to everyone
        assert AuditEvent.objects.count() == events and Proposal.objects.filter(target=third).count() == 0
        # Another agent is not limited by this one's disputes.
        actions.dispute_record(third, agent=team_agent, reason="It is out of date.")
        # Once the reviewer decides one, the agent may dispute again.
        actions.reject_proposal(held[0], actor=reviewer, note="The record stands.")
        actions.dispute_record(
            make_record(title="A fresh fact", body=f"{GOOD_BODY} Fresh."), agent=agent, reason="It is out of date."
        )


@pytest.mark.django_db
def test_dispute_past_the_cap_is_a_clear_409_over_rest(client, reviewer, make_record):
    agent, token = actions.create_agent("disputer", spaces=["team"], actor=reviewer)
    first, second = records(make_record, 2)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    with override_settings(VETTED_OPEN_DISPUTES_PER_AGENT=1):
        ok = client.post(
            f"/api/v1/records/{first.public_id}/dispute",
            {"reason": "Wrong since May."},
            content_type="application/json",
            **auth,
        )
        refused = client.post(
            f"/api/v1/records/{second.public_id}/dispute",
            {"reason": "Wrong since May."},
            content_type="application/json",
            **auth,
        )
    assert ok.status_code == 201
    assert refused.status_code == 409
    data = refused.json()
    assert data["error"] == "limit_reached" and data["limit"] == 1 and data["open_disputes"] == 1
    assert "VETTED_OPEN_DISPUTES_PER_AGENT" in data["message"]


@pytest.fixture
def signed_in(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.mark.django_db
def test_reviewer_is_warned_when_one_agent_disputes_many_records_at_once(signed_in, agent, team_agent, make_record):
    many = records(make_record, 4)
    for record in many[:3]:
        actions.dispute_record(record, agent=agent, reason="All of these are wrong.")
    actions.dispute_record(many[3], agent=team_agent, reason="This one is wrong.")
    warning = "Agent claude-code disputed 3 records in the last 10 minutes"
    inbox = signed_in.get("/").content.decode()
    banner = inbox[inbox.index('id="dispute-warnings"') :]
    assert warning in banner[: banner.index("</div>")]
    assert inbox.count('dispute-warning"') == 3  # on each of its dispute cards, not on team-bot's
    assert "team-bot disputed" not in inbox
    disputed = signed_in.get("/disputed/").content.decode()
    assert 'id="dispute-warnings"' in disputed and warning in disputed


@pytest.mark.django_db
def test_no_warning_for_a_few_disputes_or_old_ones(signed_in, agent, make_record):
    many = records(make_record, 3)
    actions.dispute_record(many[0], agent=agent, reason="This one is wrong.")
    assert "dispute-warning" not in signed_in.get("/").content.decode()
    for record in many[1:]:
        actions.dispute_record(record, agent=agent, reason="This one is wrong.")
    Proposal.objects.update(created_at=timezone.now() - timedelta(minutes=11))
    with override_settings(VETTED_OPEN_DISPUTES_PER_AGENT=100):  # three open of 100 is no hoard either
        assert "dispute-warning" not in signed_in.get("/").content.decode()
    with override_settings(VETTED_OPEN_DISPUTES_PER_AGENT=6):  # half the cap open is
        page = signed_in.get("/disputed/").content.decode()
        assert "Agent claude-code holds many disputes: 3 of its disputes are open (limit 6)" in page


# --------------------------------------------------------------------------- MCP sessions (in process)


def _mcp_app():
    from memory_site.asgi import build_application

    return build_application()


async def _post(http, token, message, session=None):
    headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
    if session:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": HANDSHAKE}
    return await http.post("/mcp", json=message, headers=headers)


def _open_sessions(app, steps):
    """Run ``await steps(http)`` against the in-process ASGI app, its session manager running."""

    async def go():
        async with app.mcp_sessions.run():
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                return await steps(http)

    return asyncio.run(go())


@override_settings(VETTED_MCP_SESSIONS_PER_AGENT=2)
def test_opening_one_session_past_the_cap_closes_the_agents_oldest(agent_tokens):
    app = _mcp_app()
    manager = app.mcp_sessions
    a, b = agent_tokens["claude-code"], agent_tokens["team-bot"]

    async def steps(http):
        opened = [(await _post(http, a, INIT)).headers["mcp-session-id"] for _ in range(3)]
        oldest = manager._server_instances.get(opened[0])
        assert oldest is None  # forgotten at once
        await asyncio.sleep(0.2)  # let the background termination run
        first = await _post(http, a, DESCRIBE, opened[0])
        rest = [await _post(http, a, DESCRIBE, s) for s in opened[1:]]
        theirs = await _post(http, b, INIT)
        return opened, first, rest, theirs, len(manager._server_instances)

    opened, first, rest, theirs, open_count = _open_sessions(app, steps)
    assert first.status_code == 404
    assert [r.status_code for r in rest] == [200, 200] and "Vetted" in rest[0].text
    assert theirs.status_code == 200 and theirs.headers["mcp-session-id"] not in opened
    assert open_count == 3  # two of A's, one of B's: the oldest is gone from the manager


def test_a_session_answers_only_its_own_agent_even_after_a_token_rotation(agent_tokens, reviewer):
    app = _mcp_app()
    a, b = agent_tokens["claude-code"], agent_tokens["team-bot"]

    async def steps(http):
        session = (await _post(http, a, INIT)).headers["mcp-session-id"]
        foreign = await _post(http, b, DESCRIBE, session)
        unknown = await _post(http, b, DESCRIBE, "0" * 32)
        _agent, rotated = await asyncio.to_thread(actions.rotate_agent_token, "claude-code", actor=reviewer)
        own = await _post(http, rotated, DESCRIBE, session)
        old_token = await _post(http, a, DESCRIBE, session)
        return foreign, unknown, own, old_token

    foreign, unknown, own, old_token = _open_sessions(app, steps)
    # Another agent's session id looks exactly like one that does not exist.
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.content == unknown.content
    assert own.status_code == 200 and "claude-code" in own.text  # the same agent, a new token
    assert old_token.status_code == 401


@override_settings(VETTED_MCP_INITIALIZE_PER_MINUTE=3)
def test_new_sessions_per_minute_are_limited_per_agent_with_429(agent_tokens):
    app = _mcp_app()
    a, b = agent_tokens["claude-code"], agent_tokens["team-bot"]

    async def steps(http):
        opened = [await _post(http, a, INIT) for _ in range(3)]
        refused = await _post(http, a, INIT)
        still = await _post(http, a, DESCRIBE, opened[-1].headers["mcp-session-id"])
        theirs = await _post(http, b, INIT)
        return opened, refused, still, theirs

    opened, refused, still, theirs = _open_sessions(app, steps)
    assert [r.status_code for r in opened] == [200, 200, 200]
    assert refused.status_code == 429 and "mcp-session-id" not in refused.headers
    data = refused.json()
    retry = int(refused.headers["retry-after"])
    assert data["error"] == "rate_limited" and data["retry_after"] == retry
    assert "VETTED_MCP_INITIALIZE_PER_MINUTE" in data["message"] and f"retry in {retry} s" in data["message"]
    assert still.status_code == 200  # open sessions keep working
    assert theirs.status_code == 200  # another agent is not affected


# --------------------------------------------------------------------------- the real daemon and MCP client


@pytest.fixture(scope="module")
def limited_daemon(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_daemon(
        tmp_path_factory.mktemp("limits-daemon"), VETTED_MCP_SESSIONS_PER_AGENT="2", VETTED_READS_PER_MINUTE="4"
    ) as daemon:
        yield daemon


async def _client(stack, url, token):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60))
    )
    return await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode="legacy"))


@pytest.mark.slow
def test_mcp_client_sessions_past_the_cap_close_the_oldest_and_other_agents_still_connect(limited_daemon, agent_tokens):
    from contextlib import AsyncExitStack

    from mcp import MCPError

    async def go():
        async with AsyncExitStack() as stack:
            url, a = limited_daemon.mcp_url, agent_tokens["claude-code"]
            first = await _client(stack, url, a)
            await _client(stack, url, a)
            newest = await _client(stack, url, a)
            try:
                closed = await first.list_tools()
            except MCPError as exc:
                closed = exc
            alive = await newest.list_tools()
            other = await _client(stack, url, agent_tokens["team-bot"])
            return closed, alive, await other.list_tools()

    try:
        closed, alive, other = asyncio.run(go())
    except BaseExceptionGroup as group:  # closing the evicted client's context may report its 404
        pytest.fail(f"unexpected error: {group!r}")
    assert isinstance(closed, Exception), closed
    assert {t.name for t in alive.tools} == {t.name for t in other.tools} >= {"search", "dispute"}


@pytest.mark.slow
def test_reads_past_the_limit_are_a_rate_limited_tool_error_over_mcp(limited_daemon, agent_tokens):
    from tests.mcp_client import over_http

    async def searches(client):
        return [await client.call_tool("search", {"query": "deploy"}) for _ in range(5)]

    results = over_http(limited_daemon.mcp_url, agent_tokens["claude-code"], searches)
    assert [r.is_error for r in results] == [False, False, False, False, True]
    assert "[rate_limited]" in text_of(results[-1]) and "retry in" in text_of(results[-1])
    other = over_http(
        limited_daemon.mcp_url, agent_tokens["team-bot"], lambda c: c.call_tool("search", {"query": "deploy"})
    )
    assert not other.is_error, text_of(other)
    assert json.loads(text_of(other))["results"] == []
