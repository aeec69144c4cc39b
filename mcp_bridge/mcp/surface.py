"""``VettedServer``: the SDK's MCPServer with Vetted's resources,
subscriptions, prompt and error words (the tools are in server.py).

- Resources (mcp_bridge/agent_api/resources.py): ``vetted://records/{id}``
  and ``vetted://proposals/{id}`` as resource templates, a paged
  ``resources/list`` per agent, ``resources/read`` through the read gate.
- Subscriptions on both revisions (mcp_bridge/mcp/subscriptions.py).
- The prompt ``vetted-instructions`` (common/guidance.py); an unknown
  prompt answers JSON-RPC -32602 naming the prompts there are.
- Tool arguments pydantic refuses are reported in Vetted's words
  (mcp_bridge/mcp/tooling.py).

Every handler resolves the agent from the request's token again, like the
tools (a token revoked mid-session stops working on the next request).
"""

from __future__ import annotations

from typing import Any

import anyio
from django.db import close_old_connections
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from pydantic import ValidationError

from common import guidance
from mcp_bridge import agent_api
from reviews import actions
from reviews.errors import NotFound, VettedError
from reviews.models import Agent

from .subscriptions import ChangeFeed, LegacySubscriptions, Listen
from .tooling import validation_text

JSON = "application/json"


def agent_for_headers(headers) -> Agent:
    """The agent a request's bearer token belongs to (Unauthorized otherwise)."""
    token = _bearer_of(headers)
    audiences = actions.oauth.audiences_for(actions.oauth.mcp_resource())
    agent = actions.agent_for_token(token, via="mcp-tool", audiences=audiences)
    actions.note_agent_seen(agent)
    return agent


def _request_headers(ctx: ServerRequestContext[Any, Any]):
    return getattr(ctx.request, "headers", None)


async def _as_agent(ctx: ServerRequestContext[Any, Any], fn, *args, not_found_data: dict | None = None):
    """Run ``fn(agent, *args)`` in a worker thread; domain errors become
    JSON-RPC errors in Vetted's words (-32602 for what the caller sent)."""
    headers = _request_headers(ctx)

    def run():
        close_old_connections()
        try:
            return fn(agent_for_headers(headers), *args)
        finally:
            close_old_connections()

    try:
        return await anyio.to_thread.run_sync(run)
    except NotFound as exc:
        raise MCPError(INVALID_PARAMS, exc.message, data=not_found_data) from None
    except VettedError as exc:
        raise MCPError(INVALID_PARAMS, f"[{exc.code}] {exc.message}", data=exc.as_dict()) from None


def _bearer_of(headers) -> str:
    scheme, _, token = (headers or {}).get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _credential(ctx: ServerRequestContext[Any, Any], cost: int = 1) -> agent_api.Credential:
    """The credential of a subscribe, unsubscribe or listen request, each
    counted by the read limit like any other read (a subscription reads
    through the gate, and a listen stream once per uri it names)."""
    token = _bearer_of(_request_headers(ctx))

    def counted(agent: Agent) -> agent_api.Credential:
        agent_api.read_limiter.hit(agent, cost=cost)
        return agent_api.Credential.of(agent, token)

    return await _as_agent(ctx, counted)


TEMPLATES = [
    ResourceTemplate(
        uri_template=agent_api.RECORD_URI,
        name="record",
        title="Approved record",
        description="A record you may receive right now (approved, current, in your spaces), as JSON: "
        "the same fields as the read tool. Anything else answers like an unknown id.",
        mime_type=JSON,
    ),
    ResourceTemplate(
        uri_template=agent_api.PROPOSAL_URI,
        name="proposal",
        title="Your proposal",
        description="One of your proposals and what the reviewer decided (state, decision_note, result_record), "
        "as JSON: the same as proposal_status. Subscribe to hear when it is decided.",
        mime_type=JSON,
    ),
]


class VettedServer(MCPServer):
    def __init__(self, *args, **kwargs):
        self.change_feed = ChangeFeed()
        super().__init__(*args, **kwargs)
        legacy = LegacySubscriptions(self.change_feed, _credential, self._end_session)
        lowlevel = self._lowlevel_server
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, legacy.subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, legacy.unsubscribe)
        lowlevel.add_request_handler(
            "subscriptions/listen", SubscriptionsListenRequestParams, Listen(self.change_feed, _credential)
        )

    def _end_session(self, session_id: str) -> None:
        """Close an MCP session (its streams end, its id answers 404): its
        credential ended. The session manager is there when served over HTTP."""
        manager = getattr(self._lowlevel_server, "_session_manager", None)
        if manager is not None and session_id:
            manager.end_session(session_id)

    # --- tools: errors in Vetted's words (pydantic's complaints too)

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(validation_text(cause)) from None
            if type(cause) is ToolError:  # ours, without the SDK's "Error executing tool NAME: "
                raise ToolError(str(cause)) from None
            raise

    # --- prompts

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context=None):
        if self._prompt_manager.get_prompt(name) is None:
            known = ", ".join(p.name for p in self._prompt_manager.list_prompts())
            raise MCPError(INVALID_PARAMS, f"[invalid] name: no prompt {name[:60]!r}; prompts: {known}")
        return await super().get_prompt(name, arguments, context)

    # --- resources

    async def _handle_list_resource_templates(self, ctx, params) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        cursor = params.cursor if params is not None else None
        items, next_cursor = await _as_agent(ctx, agent_api.list_resources, cursor)
        resources = [
            Resource(uri=i["uri"], name=i["name"], title=i["title"], description=i["description"], mime_type=JSON)
            for i in items
        ]
        return ListResourcesResult(resources=resources, next_cursor=next_cursor)

    async def _handle_read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        uri = str(params.uri)
        # -32602 with the uri in data for anything it may not read (SEP-2164).
        text = await _as_agent(ctx, agent_api.read_resource, uri, not_found_data={"uri": uri})
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=text, mime_type=JSON)])


def add_prompt(server: MCPServer) -> None:
    """The guidance connect prints, for clients that pull prompts."""

    @server.prompt(name=guidance.PROMPT_NAME, title="How to use Vetted", description=guidance.PROMPT_DESCRIPTION)
    def vetted_instructions() -> str:  # one user message with the text
        return guidance.GUIDANCE
