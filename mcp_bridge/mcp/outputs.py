"""The ``outputSchema`` of each MCP tool, read from the serializers that
describe the REST API's answers (mcp_bridge/api/schema.py): one description
of what an agent receives, for both interfaces.

drf-spectacular builds the OpenAPI document from the same serializers, but
it takes about a second, too slow for the daemon's start; this walks the few
field types those serializers use (anything else fails loudly here, at
start-up, rather than publishing a wrong schema).
"""

from __future__ import annotations

from typing import Any

from rest_framework import fields as f
from rest_framework import serializers

from ..api import schema as s

# JSON Schema for the leaf fields the answer serializers use. Order matters:
# subclasses before their bases (DateTimeField is no CharField, but
# ChoiceField, RegexField and friends are handled before CharField).
_LEAVES: tuple[tuple[type[f.Field], dict[str, Any]], ...] = (
    (f.BooleanField, {"type": "boolean"}),
    (f.IntegerField, {"type": "integer"}),
    (f.FloatField, {"type": "number"}),
    (f.DateTimeField, {"type": "string", "format": "date-time"}),
    (f.DateField, {"type": "string", "format": "date"}),
    (f.CharField, {"type": "string"}),
)


def field_schema(field: f.Field) -> dict[str, Any]:
    """The JSON Schema of one serializer field (nullable when allow_null).

    Written in the forms every MCP client reads: a nullable value is
    ``anyOf: [X, {"type": "null"}]`` (as the SDK writes the tools' inputs),
    never a type array such as ``["string", "null"]``, which several clients
    and the MCP Inspector flag."""
    schema = _bare(field)
    if getattr(field, "allow_null", False):
        schema = {"anyOf": [schema, {"type": "null"}]}
    if getattr(field, "help_text", None):
        schema["description"] = str(field.help_text)
    return schema


def _bare(field: f.Field) -> dict[str, Any]:
    if isinstance(field, serializers.ListSerializer):
        assert field.child is not None  # many=True always has the item serializer
        return {"type": "array", "items": field_schema(field.child)}
    if isinstance(field, serializers.Serializer):
        return object_schema(field)
    if isinstance(field, f.ChoiceField):
        return {"type": "string", "enum": [str(choice) for choice in field.choices]}
    if isinstance(field, f.ListField):
        assert field.child is not None  # DRF gives every ListField a child
        return {"type": "array", "items": field_schema(field.child)}
    if isinstance(field, f.DictField):
        child = field.child
        if isinstance(child, f._UnvalidatedField):
            # Any values: said by leaving additionalProperties out, not by an
            # empty schema under it (clients flag that as untyped).
            return {"type": "object"}
        return {"type": "object", "additionalProperties": field_schema(child)}
    for kind, schema in _LEAVES:
        if isinstance(field, kind):
            return dict(schema)
    raise TypeError(f"mcp_bridge/mcp/outputs.py cannot describe a {type(field).__name__} ({field.field_name})")


def object_schema(serializer: serializers.Serializer) -> dict[str, Any]:
    """An object with the serializer's fields; fields it does not declare are
    allowed (an answer may grow a field before the schema does)."""
    properties = {name: field_schema(field) for name, field in serializer.fields.items()}
    required = [name for name, field in serializer.fields.items() if field.required]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _one(serializer: type[serializers.Serializer]) -> dict[str, Any]:
    return object_schema(serializer())


def _either(*choices: type[serializers.Serializer]) -> dict[str, Any]:
    # The root stays an object (Tool.outputSchema must be one), each answer a branch.
    return {"type": "object", "oneOf": [_one(choice) for choice in choices]}


def tool_output_schemas() -> dict[str, dict[str, Any]]:
    """Tool name -> its outputSchema. Every tool of the MCP server has one
    (mcp_bridge/mcp/server.py checks that none is left out)."""
    created = _one(s.ProposalCreatedSerializer)
    proposed = _either(s.ProposalCreatedSerializer, s.SimilarExistsSerializer, s.AlreadyRejectedSerializer)
    return {
        "describe": _one(s.DescribeSerializer),
        "search": _one(s.SearchSerializer),
        "read": _one(s.ReadSerializer),
        "list": _one(s.ListSerializer),
        "propose_context": proposed,
        "propose_retirement": created,
        "dispute": created,
        "proposal_status": _one(s.ProposalSerializer),
        "withdraw_proposal": _one(s.WithdrawnSerializer),
        "quality_check": _one(s.QualitySerializer),
    }
