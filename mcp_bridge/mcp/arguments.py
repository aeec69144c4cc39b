"""The argument types of the MCP tools (their names, limits and the
descriptions a model reads in each tool's input schema) and the tools'
annotations, shared by several tools of ``mcp_bridge.mcp.server``. Limits
here only shape the schema; agent_api checks every argument again."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
PROPOSE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# Withdrawing is final (a withdrawn proposal cannot be reopened), so clients may ask before calling it.
WITHDRAW = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

Query = Annotated[
    str,
    Field(
        description="What you want to know, in plain words or with exact identifiers "
        "(e.g. 'how do we deploy the billing API', 'ACME-1234').",
        max_length=2000,
    ),
]
Mode = Annotated[
    Literal["hybrid", "keyword", "semantic"],
    Field(
        description="'hybrid' (default: meaning + keywords + exact identifiers), 'keyword' "
        "(exact words only) or 'semantic' (meaning only)."
    ),
]
Kind = Annotated[
    str | None,
    Field(description="Only this kind (see describe: fact, preference, procedure, decision, reference, event, ...)."),
]
Space = Annotated[str | None, Field(description="Only this space: its slug, one of yours (describe lists them).")]
Tags = Annotated[list[str] | None, Field(description="Only records carrying all of these tags.", max_length=20)]
RecordId = Annotated[
    str, Field(description="A record id such as rec_1a2b3c4d5e6f (from search, read or list).", max_length=40)
]
# as-of: look back in time, and judge validity windows on another day.
AsOf = Annotated[
    str | None,
    Field(
        description="Answer as of this past moment (YYYY-MM-DD = the end of that day, or an ISO date-time): "
        "only what you would have received then, in its approved text.",
        max_length=40,
    ),
]
ValidAt = Annotated[
    str | None,
    Field(
        description="Only records whose validity window holds this day (YYYY-MM-DD; may be in the future).",
        max_length=10,
    ),
]
ProposalId = Annotated[str, Field(description="A proposal id (prop_...) returned when you proposed.", max_length=40)]
Reason = Annotated[str, Field(description="Why, in a sentence or two; the human reviewer reads it.", max_length=2000)]
