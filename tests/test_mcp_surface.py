"""The MCP surface beyond tools, with the official SDK client in process
(the ASGI app and its session manager, no daemon): typed tool answers,
resources through the read gate, the guidance prompt, errors in Vetted's
words. Both protocol revisions: the 2025-11-25 handshake ("legacy") and the
stateless 2026-07-28 one."""

from __future__ import annotations

import asyncio
import json

import httpx2
import jsonschema
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from memory_site import guidance
from reviews import actions
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


FACT = {
    "title": "Payments service deploy window",
    "body": "The payments service deploys every Tuesday at 14:00 UTC after the change review meeting.",
    "kind": "procedure",
    "scope": "team",
    "tags": ["payments", "deploy"],
    "reason": "The user explained the deploy routine in this session.",
}


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


def test_every_bad_field_is_named_in_one_answer_scope_included(agent_tokens):
    # team-bot may use only "team": its scope error comes with the title's.
    bad = {**FACT, "title": "x", "scope": "personal"}
    result = run_client(agent_tokens["team-bot"], lambda c: c.call_tool("propose_context", bad))
    text = text_of(result)
    assert result.is_error and text.startswith("[invalid] ")
    assert "title:" in text and "scope: got 'personal'; your scopes: team" in text
    assert "pydantic" not in text and "http" not in text


def test_an_argument_of_the_wrong_type_is_refused_without_pydantic_text(agent_tokens):
    result = run_client(agent_tokens["claude-code"], lambda c: c.call_tool("propose_context", {**FACT, "title": 5}))
    assert result.is_error and text_of(result).startswith("[invalid] title: got 5; text")
    assert "pydantic" not in text_of(result)


@pytest.mark.parametrize("mode", MODES)
def test_the_guidance_prompt_is_the_text_connect_prints(agent_tokens, mode):
    from memory_site.clients import GLOBAL_INSTRUCTIONS

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
