"""The tools' input and output schemas in the forms every MCP client reads
(the MCP Inspector flags the others): a nullable value is ``anyOf`` with
``{"type": "null"}``, never a type array such as ``["string", "null"]``, and
an object of any values leaves ``additionalProperties`` out instead of
giving it an empty schema. Read through the SDK's client, as a client sees them."""

from __future__ import annotations

from typing import Any

from tests.test_mcp_surface import run_client

_TYPED = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")


def portability_problems(schema: Any, where: str) -> list[str]:
    """Every place in a JSON Schema written in a form clients flag."""
    problems: list[str] = []
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            problems.append(f"{where}: type {schema['type']!r} (write anyOf with {{'type': 'null'}})")
        if "additionalProperties" in schema:
            extra = schema["additionalProperties"]
            if extra is True or (isinstance(extra, dict) and not any(key in extra for key in _TYPED)):
                problems.append(f"{where}: additionalProperties {extra!r} says no type")
        for key, value in schema.items():
            problems += portability_problems(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            problems += portability_problems(value, f"{where}[{i}]")
    return problems


def test_the_checker_names_type_arrays_and_untyped_additional_properties():
    bad = {
        "type": "object",
        "properties": {"at": {"type": ["string", "null"]}, "extra": {"type": "object", "additionalProperties": {}}},
    }
    assert portability_problems(bad, "x") == [
        "x/properties/at: type ['string', 'null'] (write anyOf with {'type': 'null'})",
        "x/properties/extra: additionalProperties {} says no type",
    ]
    good = {"anyOf": [{"type": "string"}, {"type": "null"}], "additionalProperties": {"type": "integer"}}
    assert portability_problems(good, "x") == []


def test_every_tool_schema_is_written_in_portable_forms(agent_tokens):
    tools = run_client(agent_tokens["claude-code"], lambda c: c.list_tools()).tools
    assert len(tools) >= 10
    problems: list[str] = []
    for tool in tools:
        problems += portability_problems(tool.input_schema, f"{tool.name} inputSchema")
        assert tool.output_schema, tool.name
        problems += portability_problems(tool.output_schema, f"{tool.name} outputSchema")
    assert problems == []
