"""The MCP tool reference, from the server's own tool list (in process, as a
client's ``tools/list`` would see it: names, descriptions, input schemas)."""

from __future__ import annotations

import asyncio
import re
from typing import Any


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _first_sentence(description: str) -> str:
    text = " ".join(description.split())
    match = re.search(r"(?<=[.!?])\s", text)
    return text[: match.start()] if match else text


def _example(description: str) -> str:
    text = " ".join(description.split())
    _, sep, rest = text.partition("Example: ")
    return rest.split(" -> ")[0].strip() if sep else ""


def _type(schema: dict[str, Any]) -> str:
    options = schema.get("anyOf") or [schema]
    kinds = []
    for option in options:
        kind = option.get("type")
        if kind == "null" or kind is None:
            continue
        if "enum" in option:
            kind = ", ".join(f"`{value}`" for value in option["enum"])
        elif kind == "array":
            kind = f"list of {option.get('items', {}).get('type', 'values')}"
        low, high = option.get("minimum"), option.get("maximum")
        if low is not None and high is not None:
            kind += f" {low}–{high}"
        if option.get("maxLength"):
            kind += f", at most {option['maxLength']} characters"
        kinds.append(kind)
    return " or ".join(kinds) or "any"


def _arguments(schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    if not properties:
        return ["Takes no arguments."]
    required = set(schema.get("required", []))
    rows = ["| argument | type | required or default | what it is |", "|---|---|---|---|"]
    for name, prop in properties.items():
        if name in required:
            need = "required"
        elif prop.get("default") is None:
            need = "optional"
        else:
            need = f"`{prop['default']}`"
        rows.append(f"| `{name}` | {_cell(_type(prop))} | {need} | {_cell(prop.get('description', ''))} |")
    return rows


def page() -> str:
    from mcp_bridge.mcp.server import build_server

    tools = asyncio.run(build_server().list_tools())
    out = [
        "# MCP tool reference",
        "",
        "The tools the MCP server lists, generated from the server itself",
        "(`python -m memory_site.docs_reference --write`). Every agent sees the same list, over HTTP and",
        "through the stdio bridge; the REST API has the same operations. When to use which:",
        "[Agents and tools](../agents.md#tools).",
        "",
        "| tool | what it does | read-only |",
        "|---|---|---|",
    ]
    for tool in tools:
        read_only = "yes" if tool.annotations and tool.annotations.read_only_hint else "no"
        out.append(
            f"| [`{tool.name}`](#{tool.name}) | {_cell(_first_sentence(tool.description or ''))} | {read_only} |"
        )
    for tool in tools:
        description = tool.description or ""
        out += ["", f"## `{tool.name}`", "", _first_sentence(description), ""]
        example = _example(description)
        if example:
            out += [f"Example: `{example}`", ""]
        out += _arguments(tool.input_schema)
    return "\n".join(out) + "\n"
