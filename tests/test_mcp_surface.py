"""The MCP surface beyond tools, with the official SDK client in process
(the ASGI app and its session manager, no daemon): typed tool answers,
resources through the read gate, the guidance prompt, errors in Vetted's
words. Both protocol revisions: the 2025-11-25 handshake ("legacy") and the
stateless 2026-07-28 one."""

from __future__ import annotations

import asyncio
import json

import httpx2
import jsonschema  # type: ignore[import-untyped]
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from common import guidance
from reviews import actions
from tests.mcp_client import NEW_FACT as FACT
from tests.mcp_client import text_of

MODES = ["legacy", "2026-07-28"]


def run_client(token: str, steps, mode: str = "legacy"):
    """``await steps(client)`` with the SDK client against the in-process app."""
    from memory_site.asgi import build_application

    app = build_application()

    async def go():
        async with app.mcp_sessions.run():
            http = httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app),
                base_url="http://127.0.0.1",
                headers={"Authorization": f"Bearer {token}"},
            )
            async with http, Client(streamable_http_client("http://127.0.0.1/mcp", http_client=http), mode=mode) as c:
                return await steps(c)

    return asyncio.run(go())


@pytest.mark.parametrize("mode", MODES)
def test_every_tool_has_an_output_schema_its_answers_match(agent_tokens, record, mode):
    async def steps(c):
        tools = {t.name: t for t in (await c.list_tools()).tools}
        answers = {
            "describe": await c.call_tool("describe", {}),
            "search": await c.call_tool("search", {"query": "billing"}),
            "read": await c.call_tool("read", {"id": record.public_id}),
            "list": await c.call_tool("list", {}),
            "propose_context": await c.call_tool("propose_context", FACT),
            "quality_check": await c.call_tool("quality_check", {}),
        }
        proposal_id = answers["propose_context"].structured_content["proposal_id"]
        answers["proposal_status"] = await c.call_tool("proposal_status", {"id": proposal_id})
        answers["withdraw_proposal"] = await c.call_tool("withdraw_proposal", {"id": proposal_id})
        answers["dispute"] = await c.call_tool("dispute", {"id": record.public_id, "reason": "The README says else."})
        answers["propose_retirement"] = await c.call_tool(
            "propose_retirement", {"id": record.public_id, "reason": "The billing API was shut down in October."}
        )
        return tools, answers

    tools, answers = run_client(agent_tokens["claude-code"], steps, mode)
    assert set(answers) == set(tools)
    for name, result in answers.items():
        schema = tools[name].output_schema
        assert schema and schema["type"] == "object", name
        assert not result.is_error, (name, text_of(result))
        jsonschema.validate(result.structured_content, schema)
        # Older clients read the text: the same answer, as JSON.
        assert json.loads(text_of(result)) == result.structured_content, name
    assert tools["search"].output_schema["properties"]["results"]["type"] == "array"


def test_tool_descriptions_have_no_docstring_indentation(agent_tokens):
    tools = run_client(agent_tokens["claude-code"], lambda c: c.list_tools()).tools
    for tool in tools:
        assert not any(line.startswith(" ") for line in tool.description.splitlines()), tool.name


@pytest.mark.parametrize("mode", MODES)
def test_a_bad_mode_is_refused_in_vettеds_words(agent_tokens, mode):
    result = run_client(
        agent_tokens["claude-code"], lambda c: c.call_tool("search", {"query": "x", "mode": "fuzzy"}), mode
    )
    assert result.is_error
    assert text_of(result) == "[invalid] mode: got 'fuzzy'; allowed: hybrid, keyword, semantic"


def test_every_bad_field_is_named_in_one_answer_space_included(agent_tokens):
    # team-bot may use only "team": its space error comes with the title's.
    bad = {**FACT, "title": "x", "space": "personal"}
    result = run_client(agent_tokens["team-bot"], lambda c: c.call_tool("propose_context", bad))
    text = text_of(result)
    assert result.is_error and text.startswith("[invalid] ")
    assert "title:" in text and "space: got 'personal'; your spaces: team" in text
    assert "pydantic" not in text and "http" not in text


def test_an_argument_of_the_wrong_type_is_refused_without_pydantic_text(agent_tokens):
    result = run_client(agent_tokens["claude-code"], lambda c: c.call_tool("propose_context", {**FACT, "title": 5}))
    assert result.is_error and text_of(result).startswith("[invalid] title: got 5; text")
    assert "pydantic" not in text_of(result)


@pytest.mark.parametrize("mode", MODES)
def test_the_guidance_prompt_is_the_text_connect_prints(agent_tokens, mode):
    from common.clients import GLOBAL_INSTRUCTIONS

    async def steps(c):
        listed = [p.name for p in (await c.list_prompts()).prompts]
        got = await c.get_prompt(guidance.PROMPT_NAME)
        try:
            await c.get_prompt("nonsense")
        except MCPError as exc:
            return listed, got, exc.error
        raise AssertionError("an unknown prompt was answered")

    listed, got, error = run_client(agent_tokens["claude-code"], steps, mode)
    assert listed == [guidance.PROMPT_NAME]
    assert got.messages[0].content.text == GLOBAL_INSTRUCTIONS == guidance.GUIDANCE
    assert error.code == -32602 and "prompts: vetted-instructions" in error.message


def test_the_server_instructions_are_the_guidance(agent_tokens):
    assert run_client(agent_tokens["claude-code"], lambda c: asyncio.sleep(0, c.instructions)) == guidance.GUIDANCE


# --------------------------------------------------------------------------- resources


def _uris(result) -> list[str]:
    return [str(r.uri) for r in result.resources]


@pytest.mark.parametrize("mode", MODES)
def test_resources_are_the_records_the_agent_may_receive(agent_tokens, agent, make_record, mode):
    mine = make_record(title="Team deploys go through the release train")
    personal = make_record(space="personal", title="Rita prefers short answers in the morning")
    withheld = make_record(title="The staging database is rebuilt nightly at 02:00 UTC")
    actions.dispute_record(withheld.public_id, agent=agent, reason="The staging rebuild moved to 03:00 UTC.")

    async def steps(c):
        listed = await c.list_resources()
        templates = await c.list_resource_templates()
        read = await c.read_resource(f"vetted://records/{mine.public_id}")
        return listed, templates, read

    listed, templates, read = run_client(agent_tokens["team-bot"], steps, mode)
    uris = _uris(listed)
    assert f"vetted://records/{mine.public_id}" in uris
    assert f"vetted://records/{personal.public_id}" not in uris  # not its space
    assert f"vetted://records/{withheld.public_id}" not in uris  # disputed: withheld
    assert [t.uri_template for t in templates.resource_templates] == [
        "vetted://records/{id}",
        "vetted://proposals/{id}",
    ]
    body = json.loads(read.contents[0].text)
    assert (
        body["id"] == mine.public_id and body["body"] == mine.body and read.contents[0].mime_type == "application/json"
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_withheld_an_ungranted_and_an_unknown_record_read_alike(agent_tokens, make_record, reviewer, mode):
    personal = make_record(space="personal", title="Rita prefers short answers in the morning")
    withheld = make_record(title="The staging database is rebuilt nightly at 02:00 UTC")
    actions.retire_record(withheld, actor=reviewer, note="The nightly rebuild was stopped.")

    async def steps(c):
        errors = []
        for rid in (personal.public_id, withheld.public_id, "rec_000000000000"):
            try:
                await c.read_resource(f"vetted://records/{rid}")
            except MCPError as exc:
                errors.append(exc.error)
        return errors

    errors = run_client(agent_tokens["team-bot"], steps, mode)
    assert len(errors) == 3 and {e.code for e in errors} == {-32602}
    # The same message but for the uri itself.
    texts = {
        e.message.replace(rid, "ID")
        for e, rid in zip(errors, [personal.public_id, withheld.public_id, "rec_000000000000"], strict=True)
    }
    assert len(texts) == 1, texts


def test_resources_list_is_paged_with_a_cursor_that_is_an_id_it_can_see(agent_tokens, make_record, monkeypatch):
    from mcp_bridge.agent_api import resources

    monkeypatch.setattr(resources, "PAGE_SIZE", 2)
    made = {make_record(title=f"Deploy note number {n} for the billing team").public_id for n in range(5)}

    async def steps(c):
        pages, cursor = [], None
        while True:
            page = await c.list_resources(cursor=cursor) if cursor else await c.list_resources()
            pages.append(page)
            cursor = page.next_cursor
            if not cursor:
                return pages

    pages = run_client(agent_tokens["team-bot"], steps)
    seen = [uri for page in pages for uri in _uris(page)]
    assert len(seen) == len(set(seen)) and {u.rsplit("/", 1)[1] for u in seen} >= made
    assert all(len(page.resources) <= 2 for page in pages) and len(pages) >= 3
    assert all(page.next_cursor in (None, *{u.rsplit("/", 1)[1] for u in seen}) for page in pages)


def test_own_proposals_are_resources_and_another_agents_read_like_unknown(agent_tokens):
    async def propose(c):
        return (await c.call_tool("propose_context", FACT)).structured_content["proposal_id"]

    theirs = run_client(agent_tokens["claude-code"], propose)

    async def steps(c):
        mine = await c.call_tool(
            "propose_context",
            {
                **FACT,
                "title": "Team standup is at 09:30 UTC",
                "body": "The team standup happens every weekday at 09:30 UTC in the main call room.",
            },
        )
        pid = mine.structured_content["proposal_id"]
        read = await c.read_resource(f"vetted://proposals/{pid}")
        listed = _uris(await c.list_resources())
        try:
            await c.read_resource(f"vetted://proposals/{theirs}")
        except MCPError as exc:
            return pid, read, listed, exc.error
        raise AssertionError("another agent's proposal was readable")

    pid, read, listed, error = run_client(agent_tokens["team-bot"], steps)
    assert json.loads(read.contents[0].text)["state"] == "pending"
    assert f"vetted://proposals/{pid}" in listed and f"vetted://proposals/{theirs}" not in listed
    assert error.code == -32602 and theirs in error.message and "unknown" in error.message


# --------------------------------------------------------------------------- SSE priming (SEP-1699)


def test_sse_streams_open_with_a_priming_event_and_a_retry(agent_tokens):
    from memory_site.asgi import build_application

    app = build_application()
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {agent_tokens['team-bot']}"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }

    async def go():
        async with app.mcp_sessions.run():
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                opened = await http.post("/mcp", json=init, headers=headers)
                session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
                ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
                return opened, await http.post("/mcp", json=ping, headers=headers | session)

    for response in asyncio.run(go()):
        assert response.headers["content-type"].startswith("text/event-stream")
        first = response.text.split("\n\n")[0].splitlines()
        assert first[0].startswith("id: ") and len(first[0]) > 20  # a random id
        assert "retry: 2000" in first and "data: " in first


def test_a_sessions_event_store_replays_only_its_own_stream():
    from mcp.server.streamable_http import EventMessage

    from mcp_bridge.mcp.replay import SessionEventStore

    mine, theirs = SessionEventStore(), SessionEventStore()

    async def go():
        first = await mine.store_event("1", None)
        await mine.store_event("1", {"jsonrpc": "2.0", "id": 1, "result": {}})
        await mine.store_event("2", {"jsonrpc": "2.0", "id": 2, "result": {}})
        sent: list[EventMessage] = []

        async def send(event):
            sent.append(event)

        stream = await mine.replay_events_after(first, send)
        return stream, sent, await theirs.replay_events_after(first, send)

    stream, sent, elsewhere = asyncio.run(go())
    assert stream == "1" and [e.message["id"] for e in sent] == [1]
    assert elsewhere is None  # another session's store knows nothing of it


# --------------------------------------------------------------------------- the change feed (subscriptions)


def _feed_run(steps):
    from mcp_bridge.mcp.subscriptions import ChangeFeed, Subscriber

    feed = ChangeFeed(poll_seconds=3600)  # passes are run by hand: feed.check()
    heard: list[tuple[str, dict]] = []

    async def deliver(uri, meta):
        heard.append((uri, meta))

    from mcp_bridge.agent_api import Credential
    from reviews.models import Agent

    # A fresh static token per agent: a subscriber is bound to the credential that opened it.
    tokens = {
        a.public_id: actions.rotate_agent_token(a.name, actor=a.owner)[1]
        for a in Agent.objects.filter(is_active=True).exclude(owner=None)
    }

    def subscriber(agent):
        return Subscriber(Credential.of(agent, tokens[agent.public_id]), deliver)

    async def go():
        try:
            return await steps(feed, subscriber)
        finally:
            if feed._task is not None:
                feed._task.cancel()

    result = asyncio.run(go())
    return heard, result


def test_a_watcher_hears_nothing_of_activity_it_cannot_read(transactional_db, agent, team_agent, reviewer, make_record):
    """Another agent proposing a revision of a watched record, a record outside
    the watcher's spaces retired, another agent's proposal decided: silence.
    The record retired: heard, with why it is withheld."""
    watched = make_record()
    personal = make_record(space="personal", title="Rita prefers short answers in the morning")
    theirs = actions.propose_create(agent=agent, **{**FACT, "title": "Their proposal title"})

    async def steps(feed, subscriber):
        me = subscriber(team_agent)
        for uri in (
            f"vetted://records/{watched.public_id}",
            f"vetted://records/{personal.public_id}",
            f"vetted://proposals/{theirs.public_id}",
        ):
            await feed.add(me, uri)

        def activity():
            actions.propose_revision(
                watched.public_id, agent=agent, reason="The README changed.", body=watched.body + " Also on Fridays."
            )
            actions.retire_record(personal, actor=reviewer, note="No longer true.")
            actions.reject_proposal(theirs, actor=reviewer, note="Not needed.")

        await asyncio.to_thread(activity)
        await feed.check()
        await asyncio.to_thread(actions.retire_record, watched.public_id, actor=reviewer, note="Shut down.")
        await feed.check()

    heard, _ = _feed_run(steps)
    assert heard == [
        (f"vetted://records/{watched.public_id}", {"vetted/deliverable": False, "vetted/withheld": "retired"})
    ]


def test_a_subscriber_whose_session_ended_is_forgotten(transactional_db, agent):
    from mcp_bridge.mcp.subscriptions import Subscriber

    async def steps(feed, subscriber):
        alive = [True]
        held = subscriber(agent)
        gone = Subscriber(held.credential, held.deliver, alive=lambda: alive[0])
        await feed.add(gone, "vetted://proposals/prop_000000000000")
        alive[0] = False
        feed.poll_seconds = 0.01
        await asyncio.sleep(0.1)
        return feed.subscribers

    _, left = _feed_run(steps)
    assert left == set()


def test_a_2026_client_gets_the_same_answers_as_a_2025_one(agent_tokens, record):
    async def steps(c):
        tools = sorted(
            (
                t.name,
                t.description,
                json.dumps(t.output_schema, sort_keys=True),
                json.dumps(t.input_schema, sort_keys=True),
            )
            for t in (await c.list_tools()).tools
        )
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        listed = [str(r.uri) for r in (await c.list_resources()).resources]
        read = (await c.read_resource(f"vetted://records/{record.public_id}")).contents[0].text
        prompt = (await c.get_prompt(guidance.PROMPT_NAME)).messages[0].content.text
        found = (await c.call_tool("read", {"id": record.public_id})).structured_content
        refused = text_of(await c.call_tool("search", {"query": "x", "mode": "fuzzy"}))
        return tools, templates, listed, read, prompt, found, refused

    token = agent_tokens["team-bot"]
    assert run_client(token, steps, "legacy") == run_client(token, steps, "2026-07-28")

    def capabilities(c):
        return asyncio.sleep(0, (c.protocol_version, c.server_capabilities))

    # "auto" asks server/discover (a pinned version only assumes it).
    for mode, version in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
        negotiated, caps = run_client(token, capabilities, mode)
        assert negotiated == version
        assert caps.resources.subscribe is True and caps.prompts is not None and caps.tools is not None


def test_tools_take_space_and_describe_no_fixed_names(agent_tokens, record):
    """``space`` is the argument (the answer matches its outputSchema); no
    tool describes the three old fixed names."""

    async def steps(c):
        tools = {t.name: t for t in (await c.list_tools()).tools}
        fact = {k: v for k, v in FACT.items() if k != "space"}
        by_space = {
            "search": await c.call_tool("search", {"query": "billing", "space": "team"}),
            "list": await c.call_tool("list", {"space": "team"}),
            "quality_check": await c.call_tool("quality_check", {"space": "team"}),
            "propose_context": await c.call_tool("propose_context", {**fact, "space": "team"}),
        }
        return tools, by_space

    tools, by_space = run_client(agent_tokens["claude-code"], steps)
    for name, result in by_space.items():
        assert "space" in tools[name].input_schema["properties"], name
        assert not result.is_error, (name, text_of(result))
        jsonschema.validate(result.structured_content, tools[name].output_schema)
        assert "deprecated" not in result.structured_content, name
    assert by_space["search"].structured_content["results"], "space filters"
    for tool in tools.values():
        text = json.dumps(tool.input_schema) + (tool.description or "")
        assert "'personal', 'team'" not in text and "'personal' (only you" not in text, tool.name
