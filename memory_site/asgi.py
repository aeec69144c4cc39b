"""The one ASGI application `manage.py serve` runs: the Django site (its
static files served by WhiteNoise's middleware, common/static_files.py),
the REST API under /api/v1/, and MCP streamable HTTP at /mcp.

/mcp goes to the MCP SDK's Starlette app (with a per-agent session cap,
mcp_bridge/mcp/sessions.py) behind three guards (body size; agent token and new
sessions per minute; exact Origin); everything else goes to Django, with the
body-size guard (and the early answer to read-limited agents) on /api/. Lifespan
events go to the MCP app: its session manager's task group starts there
(without it every MCP request fails with 500), and Django's ASGI handler
refuses lifespan events anyway.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

# Static files (CSS, vendored JS, the admin's) are served by the app itself
# (Vetted is a single process, often with no web server in front): by
# WhiteNoise's middleware, under hashed names with a one-year cache and
# compressed, which Django's finders (ASGIStaticFilesHandler) cannot do.
django_app = get_asgi_application()

from django.conf import settings  # noqa: E402

from mcp_bridge.mcp.guard import check_origin, limit_body, refuse_limited_reads, require_agent_token  # noqa: E402
from mcp_bridge.mcp.server import build_server, transport_security  # noqa: E402
from mcp_bridge.mcp.sessions import streamable_http_app  # noqa: E402
from mcp_bridge.oauth import app as oauth_endpoints  # noqa: E402

MCP_PATH = "/mcp"


def build_application():
    """A fresh application (the MCP session manager can start only once per
    instance, so tests that start several servers build one each)."""
    mcp_starlette = streamable_http_app(
        build_server(),
        path=MCP_PATH,
        transport_security=transport_security(settings.ALLOWED_HOSTS),
        # Our guard enforces the (stated) limit first; keep the SDK's as a backstop.
        max_request_body_size=settings.VETTED_MAX_REQUEST_BYTES,
        sessions_per_agent=settings.VETTED_MCP_SESSIONS_PER_AGENT,
    )
    mcp_app = limit_body(require_agent_token(check_origin(mcp_starlette)))
    api_app = limit_body(refuse_limited_reads(django_app))
    oauth_app = limit_body(oauth_endpoints.build_oauth_app())  # OAuth 2.1 metadata and endpoints (mcp_bridge/oauth)

    async def application(scope, receive, send):
        if scope["type"] == "lifespan":
            return await mcp_starlette(scope, receive, send)
        path = scope.get("path", "")
        if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            return await mcp_app(scope, receive, send)
        if oauth_endpoints.handles(path):
            return await oauth_app(scope, receive, send)
        if path.startswith("/api/"):
            return await api_app(scope, receive, send)
        return await django_app(scope, receive, send)

    application.mcp_sessions = mcp_starlette.state.session_manager  # type: ignore[attr-defined]  # for serve and tests
    return application


application = build_application()
