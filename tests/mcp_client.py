"""The official MCP Python client, driven from synchronous tests.

Each helper opens its own session and closes it, so tests can interleave
MCP calls with ORM calls (which must not run inside the event loop).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def _http_target(url: str, token: str | None, extra_headers: dict | None = None):
    headers = dict(extra_headers or {})
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))


# What an agent proposes in the MCP tests: a team procedure.
NEW_FACT: dict[str, Any] = {
    "title": "Payments service deploy window",
    "body": "The payments service deploys every Tuesday at 14:00 UTC after the change review meeting.",
    "kind": "procedure",
    "space": "team",
    "tags": ["payments", "deploy"],
    "reason": "The user explained the deploy routine in this session.",
}


async def _with_http(url, token, fn, mode="auto", on_message=None):
    async with (
        _http_target(url, token) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, message_handler=on_message) as client,
    ):
        return await fn(client)


def over_http(url: str, token: str | None, fn, mode: str = "auto", on_message=None):
    """Run ``await fn(client)`` in a fresh MCP session over streamable HTTP, on
    the protocol revision ``mode`` names ("legacy" is the 2025-11-25 handshake)."""
    return asyncio.run(_with_http(url, token, fn, mode, on_message))


def call(url: str, token: str, tool: str, arguments: dict | None = None):
    return over_http(url, token, lambda c: c.call_tool(tool, arguments or {}))


def tool_names(url: str, token: str) -> list[str]:
    async def names(client):
        return [t.name for t in (await client.list_tools()).tools]

    return over_http(url, token, names)


def over_stdio(params: StdioServerParameters, fn, mode: str = "auto", on_message=None):
    async def go():
        async with Client(params, mode=mode, message_handler=on_message) as client:
            return await fn(client)

    return asyncio.run(go())


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)
