"""Agent token authentication for the REST API: the agent (and its source
tool) come from the bearer token alone. Session cookies are not an
authentication class here, so a logged-in reviewer's browser cannot call
the API, and no agent token opens a site page."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from reviews import actions
from reviews.errors import Unauthorized
from reviews.models import Agent

from ..oauth.challenge import challenge


class AgentTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        try:
            agent = actions.agent_for_token(
                token.strip() if scheme.lower() == "bearer" else "",
                via="rest",
                address=request.META.get("REMOTE_ADDR", ""),
                audiences=actions.oauth.audiences_for(actions.oauth.api_resource()),
            )
        except Unauthorized as exc:
            raise exceptions.AuthenticationFailed(exc.message) from None
        actions.note_agent_seen(agent)
        return AgentPrincipal(agent), agent

    def authenticate_header(self, request):
        # Names the resource metadata (RFC 9728 §5.1), where OAuth clients start.
        return challenge(actions.oauth.API_PATH)


class AgentPrincipal:
    """What DRF calls ``request.user`` for an agent call (never a Django user)."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False

    def __init__(self, agent: Agent):
        self.agent = agent
        self.pk = agent.pk

    def __str__(self) -> str:
        return f"agent:{self.agent.name}"


class IsAgent(permissions.BasePermission):
    message = "This endpoint is for agents: send 'Authorization: Bearer vt_...'."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, Agent)


class AgentTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema names the agent token."""

    target_class = "mcp_bridge.api.auth.AgentTokenAuthentication"
    name = "agentToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "vt_...",
            "description": "A per-agent token from `manage.py create_agent` or `manage.py connect`.",
        }
