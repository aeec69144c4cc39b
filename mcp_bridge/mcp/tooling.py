"""What the MCP server adds to the SDK's tools so that they answer in
Vetted's words, with typed answers:

- ``outputSchema`` on every tool (mcp_bridge/mcp/outputs.py); the SDK puts
  the dict a tool returns into ``structuredContent`` and keeps a text copy
  of it in ``content`` for clients that read only text.
- Descriptions without the docstring's indentation.
- Argument checks in one place: the input schema a client sees is the one
  the SDK builds from the tool's signature (types, enums, limits), but the
  arguments are checked by ``mcp_bridge.agent_api``, exactly as for REST, so
  a bad ``mode`` answers ``[invalid] mode: got 'fuzzy'; allowed: hybrid,
  keyword, semantic`` and every bad field is named in one answer (a space
  error beside a title error). The SDK's own model for the arguments is
  replaced by a lenient one that only fills in defaults and refuses, by
  name, an argument the tool does not take (a misspelt name, or an
  old name such as ``scope``, would be dropped silently and the call run).
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import ConfigDict, ValidationError, create_model

from .outputs import tool_output_schemas


def _is_plain_str(annotation: Any) -> bool:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation is str


class _ClosedArguments(ArgModelBase):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


# The argument names of each tool's model, by the model's name (pydantic's
# ValidationError carries only that name as its title).
_ALLOWED: dict[str, list[str]] = {}


def lenient_arguments(name: str, fn) -> type[ArgModelBase]:
    """A model with the tool's argument names and defaults that accepts any
    value (a missing required one is None): agent_api reports what is wrong.
    A plain ``str`` argument stays ``str`` so the SDK never parses JSON out
    of it (it does for the others, as some clients send lists as JSON text)."""
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn, eval_str=True).parameters.values():
        if param.name == "ctx":
            continue
        default = None if param.default is inspect.Parameter.empty else param.default
        # Exactly ``str`` (even with a None default, which pydantic does not
        # check) keeps the SDK from parsing JSON out of a title or a body.
        fields[param.name] = (str if _is_plain_str(param.annotation) else Any, default)
    _ALLOWED[f"{name}Arguments"] = list(fields)
    return create_model(f"{name}Arguments", __base__=_ClosedArguments, **fields)


def finish_tools(server: MCPServer) -> None:
    """Give every registered tool its outputSchema, a clean description and
    the lenient argument model. Fails at start-up if a tool has no schema."""
    schemas = tool_output_schemas()
    tools = server._tool_manager.list_tools()
    missing = sorted({tool.name for tool in tools} - set(schemas))
    if missing:
        raise RuntimeError(f"No outputSchema for tool(s) {', '.join(missing)} (mcp_bridge/mcp/outputs.py)")
    for tool in tools:
        tool.description = inspect.cleandoc(tool.description)
        tool.fn_metadata.arg_model = lenient_arguments(tool.name, tool.fn)
        # Validated by the client against what the tool returns (tests call
        # every tool through the SDK's client); the SDK checks only that it is a dict.
        tool.fn_metadata.output_schema = schemas[tool.name]


def validation_text(exc: ValidationError) -> str:
    """Pydantic's complaint about an argument, as Vetted says it (no URLs,
    no pydantic jargon): ``[invalid] title: got 5; text``."""
    parts = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        got = repr(error.get("input"))[:60]
        expected = {"string_type": "text", "missing": "required"}.get(error["type"], error["msg"].lower())
        if error["type"] == "extra_forbidden":
            expected = f"unknown argument; allowed: {', '.join(_ALLOWED.get(exc.title, [])) or 'none'}"
        parts.append(f"{field}: got {got}; {expected}")
    return "[invalid] " + "; ".join(parts)
