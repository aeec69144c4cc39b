"""MCP over streamable HTTP at /mcp: the SDK server and the ASGI guards in front of it."""
