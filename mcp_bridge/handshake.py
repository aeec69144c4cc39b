"""The two messages every MCP session over stdio opens with, for the
benchmarks that spawn the bridge (bench_gateway, bench_bridge_start)."""


def opening(client: str = "bench", protocol: str = "2025-06-18") -> list[dict]:
    """initialize (id 1) and the initialized notification that follows its answer."""
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": protocol,
                "capabilities": {},
                "clientInfo": {"name": client, "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
