"""Resource subscriptions against the real daemon with the official SDK
client, on both revisions: ``resources/subscribe`` (2025-11-25) and
``subscriptions/listen`` (2026-07-28). The test process plays the reviewer
(reviews.actions); the daemon learns of the decisions from the audit log."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from reviews import actions
from tests.mcp_client import NEW_FACT as FACT
from tests.mcp_client import over_http, over_stdio

pytestmark = pytest.mark.slow


def _decide_and_change(reviewer, pid, personal_id, record_id):
    # Silent for this agent: a record outside its spaces changes.
    actions.retire_record(personal_id, actor=reviewer, note="No longer true.")
    # Heard: its proposal decided, then a record it may know of withheld.
    actions.reject_proposal(pid, actor=reviewer, note="We deploy on Wednesdays now.")
    actions.retire_record(record_id, actor=reviewer, note="The billing API was shut down.")


def test_listen_hears_a_decision_and_a_withheld_record_and_nothing_else(gateway, agent_tokens, reviewer, make_record):
    record = make_record()
    personal = make_record(space="personal", title="Rita prefers short answers in the morning")
    uris = []

    async def steps(c):
        pid = (await c.call_tool("propose_context", FACT)).structured_content["proposal_id"]
        uris.extend(
            [
                f"vetted://proposals/{pid}",
                f"vetted://records/{personal.public_id}",
                f"vetted://records/{record.public_id}",
            ]
        )
        heard = []
        async with c.listen(resource_subscriptions=uris) as sub:
            await asyncio.to_thread(_decide_and_change, reviewer, pid, personal.public_id, record.public_id)
            with anyio.move_on_after(6):
                async for event in sub:
                    heard.append(event.uri)
                    if len(heard) == 2:
                        break
        note = (await c.read_resource(uris[0])).contents[0].text
        return heard, note

    heard, note = over_http(gateway.mcp_url, agent_tokens["team-bot"], steps, "2026-07-28")
    assert sorted(heard) == sorted([uris[0], uris[2]])
    assert "We deploy on Wednesdays now." in note


def test_resources_subscribe_hears_the_decision_note_in_the_notification(gateway, agent_tokens, reviewer, make_record):
    record = make_record()
    personal = make_record(space="personal", title="Rita prefers short answers in the morning")
    heard: list = []

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            heard.append(root.params)

    async def steps(c):
        pid = (await c.call_tool("propose_context", FACT)).structured_content["proposal_id"]
        for uri in (
            f"vetted://proposals/{pid}",
            f"vetted://records/{personal.public_id}",
            f"vetted://records/{record.public_id}",
        ):
            await c.session.subscribe_resource(uri)
        await asyncio.to_thread(_decide_and_change, reviewer, pid, personal.public_id, record.public_id)
        with anyio.move_on_after(6):
            while len(heard) < 2:
                await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # anything more would come within a poll
        return pid

    pid = over_http(gateway.mcp_url, agent_tokens["team-bot"], steps, "legacy", on_message)
    by_uri = {str(p.uri): p.meta or {} for p in heard}
    assert set(by_uri) == {f"vetted://proposals/{pid}", f"vetted://records/{record.public_id}"}
    told = by_uri[f"vetted://proposals/{pid}"]
    assert told["vetted/state"] == "rejected" and told["vetted/decision_note"] == "We deploy on Wednesdays now."
    assert by_uri[f"vetted://records/{record.public_id}"]["vetted/withheld"] == "retired"


# --------------------------------------------------------------------------- through the stdio bridge


def _over_bridge(gateway, token, steps, mode, on_message=None):
    from tests.test_mcp_stdio import bridge_params

    return over_stdio(bridge_params(gateway.base, token), steps, mode, on_message)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_bridge_gives_the_same_answers_as_http_on_both_revisions(gateway, agent_tokens, record, mode):
    async def steps(c):
        tools = sorted((t.name, t.description, str(t.output_schema)) for t in (await c.list_tools()).tools)
        prompt = (await c.get_prompt("vetted-instructions")).messages[0].content.text
        read = (await c.read_resource(f"vetted://records/{record.public_id}")).contents[0].text
        found = (await c.call_tool("read", {"id": record.public_id})).structured_content
        return tools, prompt, read, found, c.protocol_version

    token = agent_tokens["team-bot"]
    via_http = over_http(gateway.mcp_url, token, steps, mode)
    via_bridge = _over_bridge(gateway, token, steps, mode)
    assert via_bridge == via_http
    assert via_bridge[-1] == ("2025-11-25" if mode == "legacy" else "2026-07-28")


def test_a_2026_client_through_the_bridge_discovers_instead_of_falling_back(gateway, agent_tokens):
    async def steps(c):
        return c.protocol_version

    assert _over_bridge(gateway, agent_tokens["team-bot"], steps, "auto") == "2026-07-28"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_subscriptions_work_through_the_bridge(gateway, agent_tokens, reviewer, mode):
    heard: list = []

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            heard.append(str(root.params.uri))

    async def steps(c):
        pid = (await c.call_tool("propose_context", FACT)).structured_content["proposal_id"]
        uri = f"vetted://proposals/{pid}"
        if mode == "legacy":
            await c.session.subscribe_resource(uri)
            await asyncio.sleep(0.5)  # the bridge opens the session's stream
            await asyncio.to_thread(actions.accept_proposal, pid, actor=reviewer, note="Thanks.")
            with anyio.move_on_after(8):
                while not heard:
                    await asyncio.sleep(0.1)
            return uri, list(heard)
        async with c.listen(resource_subscriptions=[uri]) as sub:
            await asyncio.to_thread(actions.accept_proposal, pid, actor=reviewer, note="Thanks.")
            with anyio.fail_after(8):
                event = await sub.__anext__()
        return uri, [event.uri]

    uri, got = _over_bridge(gateway, agent_tokens["team-bot"], steps, mode, on_message)
    assert got == [uri]


def test_an_agent_holds_at_most_its_session_cap_of_listen_streams(gateway, agent_tokens):
    """16 (VETTED_MCP_SESSIONS_PER_AGENT) open streams: the next is refused
    for that agent, saying why; another agent still listens."""
    from contextlib import AsyncExitStack

    from mcp import MCPError

    async def steps(c):
        async with AsyncExitStack() as stack:
            for _ in range(16):
                await stack.enter_async_context(
                    c.listen(resource_subscriptions=["vetted://proposals/prop_000000000000"])
                )
            try:
                await stack.enter_async_context(c.listen(resources_list_changed=True))
            except MCPError as exc:
                refused = exc.error.message
            else:
                refused = ""
            token = agent_tokens["team-bot"]
            other = await asyncio.to_thread(over_http, gateway.mcp_url, token, _listen_once, "2026-07-28")
            return refused, other

    refused, other = over_http(gateway.mcp_url, agent_tokens["claude-code"], steps, "2026-07-28")
    assert "[limit_reached] at most 16 open listen streams per agent" in refused
    assert other is True


async def _listen_once(c):
    async with c.listen(resources_list_changed=True):
        return True
