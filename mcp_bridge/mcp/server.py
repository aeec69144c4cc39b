"""The MCP server agents talk to (streamable HTTP at /mcp, and through the
stdio bridge). Every tool is a thin wrapper over ``mcp_bridge.agent_api``.

The most important feature is the tool that is not here: there is no tool
to approve, edit, delete, retire or verify anything (tests/test_mcp_http.py
lists the tools and fails if one appears).

Identity: the ASGI guard (``mcp_bridge.mcp.guard``) refuses requests without a
valid agent token before they reach the SDK; each tool call then resolves
the agent again from the same request's ``Authorization`` header, so a
token revoked mid-session stops working on the next call.
"""

from __future__ import annotations

import functools
import inspect
from typing import Annotated, Any

from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field

from common import __version__ as VERSION
from common import guidance
from mcp_bridge import agent_api
from reviews import validation as v
from reviews.errors import VettedError
from reviews.models import Agent

from .arguments import (
    PROPOSE,
    READ_ONLY,
    WITHDRAW,
    AsOf,
    Kind,
    Mode,
    ProposalId,
    Query,
    Reason,
    RecordId,
    Space,
    Tags,
    ValidAt,
)
from .surface import VettedServer, add_prompt, agent_for_headers
from .tooling import finish_tools

INSTRUCTIONS = guidance.GUIDANCE  # one source: connect prints it for CLAUDE.md / AGENTS.md


def _agent(ctx: Context) -> Agent:
    return agent_for_headers(ctx.headers)


def _tool(fn):
    """Resolve the agent, run the operation, turn domain errors into tool
    errors the model can act on, and give the worker thread's database
    connection back (the SDK runs sync tools in a thread pool that Django's
    request signals never see)."""

    @functools.wraps(fn)
    def wrapper(*args, ctx: Context, **kwargs):
        close_old_connections()
        try:
            return fn(_agent(ctx), *args, **kwargs)
        except VettedError as exc:
            raise ToolError(_error_text(exc)) from None
        finally:
            close_old_connections()

    # The SDK builds the input schema from the signature: show it without the
    # agent (it comes from the token) and with the Context it should inject.
    signature = inspect.signature(fn, eval_str=True)
    params = list(signature.parameters.values())[1:]
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))
    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]  # read by inspect
    wrapper.__annotations__ = {p.name: p.annotation for p in params} | {"return": signature.return_annotation}
    del wrapper.__wrapped__
    return wrapper


def _error_text(exc: VettedError) -> str:
    text = f"[{exc.code}] {exc.message}"
    existing = exc.details.get("existing_id")
    if existing and existing not in text:
        text += f" (existing: {existing})"
    return text


def build_server() -> MCPServer:
    server = VettedServer(
        "vetted",
        title="Vetted memory",
        version=VERSION,
        instructions=INSTRUCTIONS,
        website_url=None,
        log_level="WARNING",
    )

    @server.tool(annotations=READ_ONLY)
    @_tool
    def describe(agent: Agent) -> dict[str, Any]:
        """Call this first in a session. Returns what this memory holds and how to write to it: the kinds
        (with review periods and record counts), your spaces (slug, name, record count), the tags in use (reuse them),
        the write rules and limits, and how many of your proposals wait for review. Takes no arguments.
        Example: describe() -> {"spaces": [{"slug": "acme", "name": "Acme Corp", ...}], "kinds": [...], ...}"""
        return agent_api.describe(agent)

    @server.tool(annotations=READ_ONLY)
    @_tool
    def search(
        agent: Agent,
        query: Query,
        mode: Mode = "hybrid",
        kind: Kind = None,
        space: Space = None,
        tags: Tags = None,
        limit: Annotated[int, Field(description="How many results, 1-50.", ge=1, le=50)] = 8,
        as_of: AsOf = None,
        valid_at: ValidAt = None,
    ) -> dict[str, Any]:
        """Search approved memory before you answer from memory or propose something. Returns only records
        that are true right now (approved, not overdue, unchanged since approval, not disputed, retired or
        superseded): id, title, kind, space (its space), tags, body (the most relevant excerpt when long), approval and
        verification dates, review_by and score; plus how many matches were withheld and why.
        Example: search(query="billing API deploy window", kind="procedure")"""
        return agent_api.search(
            agent,
            query,
            mode=mode,
            kind=kind,
            space=space,
            tags=tags,
            limit=limit,
            as_of=as_of,
            valid_at=valid_at,
        )

    @server.tool(annotations=READ_ONLY)
    @_tool
    def read(
        agent: Agent,
        id: RecordId,  # noqa: A002 - the tool's argument is called id
        as_of: AsOf = None,
        valid_at: ValidAt = None,
    ) -> dict[str, Any]:
        """Read one whole record by id. A record that is not deliverable right now (retired, superseded,
        disputed, overdue, edited since approval) comes back with deliverable=false and the reason instead of
        its text; a superseded one names its current version.
        Example: read(id="rec_1a2b3c4d5e6f")"""
        return agent_api.read(agent, id, as_of=as_of, valid_at=valid_at)

    @server.tool(name="list", annotations=READ_ONLY)
    @_tool
    def list_records(
        agent: Agent,
        kind: Kind = None,
        space: Space = None,
        tag: Annotated[str | None, Field(description="Only records with this tag.")] = None,
        since: Annotated[
            str | None, Field(description="Only records approved on or after this date (YYYY-MM-DD or ISO date-time).")
        ] = None,
        limit: Annotated[int, Field(description="How many, 1-100.", ge=1, le=100)] = 20,
        as_of: AsOf = None,
        valid_at: ValidAt = None,
    ) -> dict[str, Any]:
        """List recently approved records you can rely on, newest first, with a short excerpt each (use read
        for the whole text). Good for catching up on what changed. Example: list(since="2026-11-01", space="acme")"""
        return agent_api.list_records(
            agent,
            kind=kind,
            space=space,
            tag=tag,
            since=since,
            limit=limit,
            as_of=as_of,
            valid_at=valid_at,
        )

    @server.tool(annotations=PROPOSE)
    @_tool
    def propose_context(
        agent: Agent,
        title: Annotated[
            str,
            Field(
                description=f"A short, specific title ({v.TITLE_MIN}-{v.TITLE_MAX} characters, "
                "one line, no invisible characters)."
            ),
        ],
        body: Annotated[
            str,
            Field(
                description="The knowledge itself in Markdown, self-contained: someone reading "
                f"only this must understand it ({v.BODY_MIN}-{v.BODY_MAX} characters)."
            ),
        ],
        kind: Annotated[
            str,
            Field(
                description="fact, preference, procedure, decision, reference or event "
                "(describe lists the kinds in use)."
            ),
        ],
        reason: Reason,
        space: Annotated[
            str | None, Field(description="The space it belongs in: its slug, one of yours (describe lists them).")
        ] = None,
        tags: Annotated[
            list[str] | None, Field(description="Up to 20 lowercase tags; reuse tags from describe.")
        ] = None,
        review_by: Annotated[
            str | None,
            Field(
                description="When a person should re-check it (YYYY-MM-DD, future); "
                "default: today + the kind's review period."
            ),
        ] = None,
        revises: Annotated[
            str | None,
            Field(
                description="To correct or update an existing record, its id; the "
                "accepted revision supersedes it. Space cannot change."
            ),
        ] = None,
        confirm_duplicate: Annotated[
            bool,
            Field(description="Set true only after a similar_exists answer, when your text is genuinely different."),
        ] = False,
        resubmit: Annotated[
            bool,
            Field(
                description="Set true only after an already_rejected answer, when you have new grounds; "
                "needs resubmit_reason."
            ),
        ] = False,
        resubmit_reason: Annotated[
            str | None,
            Field(description="With resubmit: what changed since the rejection (the reviewer reads it)."),
        ] = None,
    ) -> dict[str, Any]:
        """Propose durable knowledge for the shared memory: a new record, or a revision of one (revises=<id>).
        Nothing is stored as true: the proposal waits for a human reviewer, who accepts, edits or rejects it.
        Search first. An exact copy of a record you can read, or of your own pending proposal (or one differing
        only in look-alike characters), is refused with its id; text nearly the same as one of those (same
        space) returns status "similar_exists" with the ids and is not stored. Content of yours a reviewer
        rejected returns status "already_rejected" with the decision and its note, and is not stored unless
        you resubmit (resubmit=true, resubmit_reason). Other agents' proposals are never
        named: the reviewer sees and compares them. Characters a reviewer cannot see (zero-width, bidi
        controls, TAG characters, variation selectors other than in emoji) are refused in every field, by
        code point and position.
        Do not save secrets, credentials, guesses or transient task state.
        Example: propose_context(title="Billing API deploys from main on weekdays", body="The billing API
        (acme/billing-api) deploys from main every weekday at 10:00 UTC; Friday deploys need approval.",
        kind="procedure", space="acme", tags=["billing", "deploy"], reason="Confirmed by the user today.")"""
        return agent_api.propose_context(
            agent,
            title=title,
            body=body,
            kind=kind,
            space=space,
            tags=tags,
            reason=reason,
            review_by=review_by,
            revises=revises,
            confirm_duplicate=confirm_duplicate,
            resubmit=resubmit,
            resubmit_reason=resubmit_reason,
        )

    @server.tool(annotations=PROPOSE)
    @_tool
    def propose_retirement(agent: Agent, id: RecordId, reason: Reason) -> dict[str, Any]:  # noqa: A002
        """Ask the reviewer to retire a record that no longer holds (the project ended, the tool was replaced).
        The record stays in search until the reviewer accepts. To correct a record instead, use
        propose_context with revises=<id>. Example: propose_retirement(id="rec_1a2b3c4d5e6f",
        reason="The Jenkins server was shut down in October; CI runs on GitHub Actions now.")"""
        return agent_api.propose_retirement(agent, id, reason)

    @server.tool(annotations=PROPOSE)
    @_tool
    def dispute(agent: Agent, id: RecordId, reason: Reason) -> dict[str, Any]:  # noqa: A002
        """Flag a record you have evidence is wrong. It is withheld from search at once, until the reviewer
        clears the dispute, retires the record or corrects it. Give the evidence in the reason.
        Example: dispute(id="rec_1a2b3c4d5e6f", reason="The README in acme/billing-api says deploys are on
        Tuesdays only since v2.3.")"""
        return agent_api.dispute(agent, id, reason)

    @server.tool(annotations=READ_ONLY)
    @_tool
    def proposal_status(agent: Agent, id: ProposalId) -> dict[str, Any]:  # noqa: A002
        """What the reviewer decided about one of your proposals: its state (pending, accepted, rejected,
        withdrawn), the reviewer's note, and the resulting record id when accepted (possibly edited by the
        reviewer). Example: proposal_status(id="prop_1a2b3c4d5e6f")"""
        return agent_api.proposal_status(agent, id)

    @server.tool(annotations=WITHDRAW)
    @_tool
    def withdraw_proposal(
        agent: Agent,
        id: ProposalId,  # noqa: A002
        note: Annotated[
            str | None,
            Field(description="Why, in a sentence (optional); kept with the proposal.", max_length=v.NOTE_MAX),
        ] = None,
    ) -> dict[str, Any]:
        """Take back one of your own proposals while it is still pending: when you find it was wrong, a
        duplicate, or overtaken by a later proposal of yours. It leaves the reviewer's inbox for good; a
        withdrawn dispute stops withholding its record (unless another dispute is pending). Only your own
        pending proposals can be withdrawn. Example: withdraw_proposal(id="prop_1a2b3c4d5e6f",
        note="Proposed twice by mistake; prop_6f5e4d3c2b1a covers it.")"""
        return agent_api.withdraw_proposal(agent, id, note)

    @server.tool(annotations=READ_ONLY)
    @_tool
    def quality_check(agent: Agent, space: Space = None) -> dict[str, Any]:
        """Ask where the memory looks inconsistent, in your spaces: possible contradictions between records you
        can read (close in meaning but differing in a negation, number, version, date or name), broken
        supersession, your own proposals waiting too long, and records withheld from you (overdue or edited
        since approval), by id only. It only flags; it changes nothing.
        Use it when search results disagree with each other. Example: quality_check(space="acme")"""
        return agent_api.quality_check(agent, space=space)

    finish_tools(server)
    add_prompt(server)
    return server


def transport_security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection for /mcp from Django's ALLOWED_HOSTS: the Host
    header must name an allowed host (any port). A browser Origin is checked
    exactly (scheme, host and port) before the SDK sees the request, by
    mcp_bridge.mcp.guard.check_origin; the SDK's any-port origin list here is only
    a backstop."""
    hosts, origins = [], []
    for host in allowed_hosts:
        if host == "*":
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        bare = host.lstrip(".")
        hosts += [bare, f"{bare}:*"]
        origins += [f"http://{bare}", f"https://{bare}", f"http://{bare}:*", f"https://{bare}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)
