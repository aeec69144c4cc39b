"""The official MCP Python client, driven from synchronous tests.

Each helper opens its own session and closes it, so tests can interleave
MCP calls with ORM calls (which must not run inside the event loop).
"""

from __future__ import annotations

import asyncio

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def _http_target(url: str, token: str | None, extra_headers: dict | None = None):
    headers = dict(extra_headers or {})
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))


async def _with_http(url, token, fn):
    async with _http_target(url, token) as http, Client(streamable_http_client(url, http_client=http)) as client:
        return await fn(client)


def over_http(url: str, token: str | None, fn):
    """Run ``await fn(client)`` in a fresh MCP session over streamable HTTP."""
    return asyncio.run(_with_http(url, token, fn))


def call(url: str, token: str, tool: str, arguments: dict | None = None):
    return over_http(url, token, lambda c: c.call_tool(tool, arguments or {}))


def tool_names(url: str, token: str) -> list[str]:
    async def names(client):
        return [t.name for t in (await client.list_tools()).tools]

    return over_http(url, token, names)


def over_stdio(params: StdioServerParameters, fn, mode: str = "auto"):
    async def go():
        async with Client(params, mode=mode) as client:
            return await fn(client)

    return asyncio.run(go())


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)
