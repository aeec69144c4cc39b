"""Timed searches against a running daemon, as an agent sends them: over MCP
(the official client, streamable HTTP, one session) and over REST. Shared by
the gateway benchmarks; each call returns its wall time in milliseconds and
how many results came back, so a benchmark can tell an answer from an empty one."""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from typing import Any
from urllib.parse import urlencode


class SearchFailed(RuntimeError):
    """A search answered with an error; the message carries what it said."""


def summary(timings: list[float]) -> dict[str, float]:
    """n, p50, p95 and max of millisecond timings (p95 by rank, as every bench table here)."""
    ordered = sorted(timings)
    return {
        "n": len(ordered),
        "p50": statistics.median(ordered),
        "p95": ordered[max(0, int(len(ordered) * 0.95) - 1)],
        "max": ordered[-1],
    }


def _hits(data: Any) -> int:
    return len(data.get("results", [])) if isinstance(data, dict) else 0


def rest_search(base: str, token: str, query: str, limit: int = 8) -> tuple[float, int]:
    request = urllib.request.Request(
        f"{base}/api/v1/search?{urlencode({'q': query, 'limit': limit})}", headers={"Authorization": f"Bearer {token}"}
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    elapsed = (time.perf_counter() - t0) * 1000
    return elapsed, _hits(json.loads(body))


class McpSearcher:
    """One MCP session to a daemon, kept open across searches:
    ``async with McpSearcher(base, token) as mcp: ms, hits = await mcp.search(q)``."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    async def __aenter__(self) -> McpSearcher:
        from contextlib import AsyncExitStack

        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        self._stack = AsyncExitStack()
        http = await self._stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
        )
        self._client = await self._stack.enter_async_context(
            Client(streamable_http_client(self.base + "/mcp", http_client=http))
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    async def search(self, query: str, limit: int = 8) -> tuple[float, int]:
        t0 = time.perf_counter()
        result = await self._client.call_tool("search", {"query": query, "limit": limit})
        elapsed = (time.perf_counter() - t0) * 1000
        if result.is_error:
            raise SearchFailed(f"MCP search failed: {result.content}")
        data = result.structured_content
        if data is None and result.content:
            try:
                data = json.loads(getattr(result.content[0], "text", ""))
            except ValueError:
                data = None
        return elapsed, _hits(data)
