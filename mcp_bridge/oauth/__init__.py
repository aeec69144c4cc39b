"""OAuth 2.1 for remote agents: Vetted as authorization server (the MCP SDK's
handlers over reviews.actions.oauth) and the resource metadata of /mcp and /api."""
