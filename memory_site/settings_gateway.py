"""Agent gateway settings (MCP and REST, mcp_bridge/): per-agent limits,
request sizes, connections, Django REST framework and the OpenAPI schema.
Read from the environment like every other setting (a bad value stops the
process, naming the variable). Imported by settings.py."""

from __future__ import annotations

from common.env import env_float, env_int

# --------------------------------------------------------------------------- agent gateway
# Agents reach Vetted over MCP (/mcp) and REST (/api/v1/), with a per-agent
# bearer token and nothing else: the site's session cookies never authorise
# an agent call, and agent tokens never open a site page.

# Proposals (creates, revisions, retirements, disputes) one agent may send per
# minute, counted over a sliding minute; 0 turns the limit off.
VETTED_PROPOSALS_PER_MINUTE = env_int("VETTED_PROPOSALS_PER_MINUTE", 60, minimum=0, maximum=100_000)
# Read calls (search, read, list, describe, quality_check, proposal_status)
# one agent may make per sliding minute, so one agent's flood cannot slow the
# others down; 0 turns the limit off.
VETTED_READS_PER_MINUTE = env_int("VETTED_READS_PER_MINUTE", 600, minimum=0, maximum=1_000_000)
# Pending disputes one agent may hold at once: each withholds a record from
# everyone until a reviewer decides; 0 turns the cap off.
VETTED_OPEN_DISPUTES_PER_AGENT = env_int("VETTED_OPEN_DISPUTES_PER_AGENT", 10, minimum=0, maximum=100_000)
# A dispute its agent withdrew still counts against the cap above for this
# many minutes, so cycling dispute and withdraw cannot withhold records (and
# send urgent notices) without end.
VETTED_WITHDRAWN_DISPUTES_COUNT_MINUTES = env_int(
    "VETTED_WITHDRAWN_DISPUTES_COUNT_MINUTES", 60, minimum=0, maximum=7 * 24 * 60
)
# MCP sessions one agent may hold open (its oldest is closed when it opens one
# more), and initialize requests (new sessions) it may send per sliding
# minute (0 = no limit). The SDK's own cap of 10 000 sessions is for all
# agents together; these keep one agent from using it up.
VETTED_MCP_SESSIONS_PER_AGENT = env_int("VETTED_MCP_SESSIONS_PER_AGENT", 16, minimum=1, maximum=1000)
VETTED_MCP_INITIALIZE_PER_MINUTE = env_int("VETTED_MCP_INITIALIZE_PER_MINUTE", 30, minimum=0, maximum=100_000)
# A new proposal whose text is at least this close in meaning (cosine of the
# best chunk pair, all-MiniLM-L6-v2) to a deliverable record in the same space
# is not stored unless the agent confirms it; 1.0 turns the check off.
VETTED_NEAR_DUPLICATE = env_float("VETTED_NEAR_DUPLICATE", 0.85, minimum=0.5, maximum=1.0)
# Largest request body accepted on /mcp and /api/ (and by Django forms). The
# largest valid proposal (20 000 characters of body, JSON-escaped) fits well.
VETTED_MAX_REQUEST_BYTES = env_int("VETTED_MAX_REQUEST_BYTES", 256 * 1024, minimum=64 * 1024, maximum=64 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = VETTED_MAX_REQUEST_BYTES
# Connections (mcp_bridge/connections.py, per serve process): a request's
# headers must arrive within VETTED_HEADER_SECONDS, and at most
# VETTED_MAX_CONNECTIONS connections are open (a request at the cap is
# answered 503, a connection beyond it is closed at once).
VETTED_HEADER_SECONDS = env_int("VETTED_HEADER_SECONDS", 10, minimum=1, maximum=300)
VETTED_MAX_CONNECTIONS = env_int("VETTED_MAX_CONNECTIONS", 256, minimum=8, maximum=100_000)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["mcp_bridge.api.auth.AgentTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["mcp_bridge.api.auth.IsAgent"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["mcp_bridge.api.parsers.JSONParser"],  # DRF's, plus a 400 for too-deep JSON
    "EXCEPTION_HANDLER": "mcp_bridge.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Vetted agent API",
    "DESCRIPTION": (
        "What an AI agent may do with Vetted's memory: search, read, list, describe, and propose. "
        "Nothing an agent sends becomes true until a person approves it in the inbox. "
        "Authenticate with `Authorization: Bearer vt_...` (create a token with `manage.py create_agent`)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}
