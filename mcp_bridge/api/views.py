"""The REST API: the same operations as the MCP tools, one thin view each.
Every view takes the agent from the token (request.auth) and calls
mcp_bridge.agent_api; errors are shaped by mcp_bridge.api.errors."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from reviews import ids
from reviews.errors import NotFound, ValidationFailed

from .. import agent_api
from . import schema as s

_RECORD_ID = OpenApiParameter(
    "record_id",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    pattern=s.RECORD_ID_PATTERN,
    description=f"A record id, {ids.describe(ids.RECORD)}.",
)
_PROPOSAL_ID = OpenApiParameter(
    "proposal_id",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    pattern=s.PROPOSAL_ID_PATTERN,
    description=f"A proposal id, {ids.describe(ids.PROPOSAL)}.",
)
# An empty filter (?space=) means no filter, as if it were not given.
_KIND = OpenApiParameter("kind", str, enum=[*s.kind_names(), ""], description="Only this kind (empty: any).")
_SPACE = OpenApiParameter("space", str, description="Only this space (its slug), one of the agent's (empty: all).")
_REASON_EXAMPLE = [
    OpenApiExample("reason", value={"reason": "The handbook changed on Monday; see its history."}, request_only=True)
]
PROPOSE_FIELDS = (
    "title",
    "body",
    "kind",
    "space",
    "tags",
    "reason",
    "review_by",
    "revises",
    "confirm_duplicate",
    "resubmit",
    "resubmit_reason",
)
_FLAGS = ("confirm_duplicate", "resubmit")
_ERRORS = {
    code: OpenApiResponse(s.ErrorSerializer, description=text)
    for code, text in {
        400: "Invalid input: what was wrong and what is allowed.",
        401: "Missing, unknown or revoked agent token.",
        404: "No such record or proposal visible to this agent.",
        429: "Rate limited (reads or writes per minute); see Retry-After.",
    }.items()
}
_WRITE_ERRORS = {
    **_ERRORS,
    403: OpenApiResponse(s.ErrorSerializer, description="Space not allowed for this agent."),
    409: OpenApiResponse(
        s.ErrorSerializer,
        description="Duplicate, invalid transition, or a limit reached (limit_reached: open disputes).",
    ),
    413: OpenApiResponse(s.ErrorSerializer, description="Request body over the limit."),
}


def _body(request, allowed: tuple[str, ...]) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise ValidationFailed({"body": f"send a JSON object with: {', '.join(allowed)}"})
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ValidationFailed({name: f"unknown field; allowed: {', '.join(allowed)}" for name in unknown})
    return data


def _query(request, allowed: tuple[str, ...] = ()) -> dict:
    """The query string, refusing parameters the endpoint does not take (a
    misspelt filter such as ?tag= on search would otherwise be ignored and
    return unfiltered results), like unknown body fields. ``format`` is DRF's
    content-negotiation override."""
    q = request.query_params
    unknown = sorted(set(q) - set(allowed) - {"format"})
    if unknown:
        listed = ", ".join(allowed) or "none"
        raise ValidationFailed({name[:50]: f"unknown query parameter; allowed: {listed}" for name in unknown[:20]})
    return q


def _tags_param(request) -> list[str] | None:
    values = [part for value in request.query_params.getlist("tags") for part in value.split(",") if part.strip()]
    return values or None


@extend_schema(
    operation_id="describe",
    summary="Vocabulary, spaces, write rules; call first",
    responses={200: s.DescribeSerializer, 401: _ERRORS[401], 429: _ERRORS[429]},
)
@api_view(["GET"])
def describe(request):
    _query(request)
    return Response(agent_api.describe(request.auth))


# as-of: on search, list and read.
_AS_OF = OpenApiParameter(
    "as_of", str, description="A past moment (YYYY-MM-DD = the end of that day, or ISO date-time): as received then."
)
_VALID_AT = OpenApiParameter("valid_at", str, description="YYYY-MM-DD: records whose validity window holds that day.")


@extend_schema(
    operation_id="search",
    summary="Gated hybrid search over what is true now",
    parameters=[
        OpenApiParameter("q", str, required=True, description="The query (up to 2000 characters)."),
        OpenApiParameter("mode", str, enum=["hybrid", "keyword", "semantic"], description="Default hybrid."),
        OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 50}, description="1-50, default 8."),
        _KIND,
        _SPACE,
        OpenApiParameter("tags", str, description="Comma-separated; records must carry all of them."),
        _AS_OF,
        _VALID_AT,
    ],
    responses={200: s.SearchSerializer, 400: _ERRORS[400], 401: _ERRORS[401], 429: _ERRORS[429]},
)
@api_view(["GET"])
def search(request):
    q = _query(request, ("q", "mode", "limit", "kind", "space", "tags", "as_of", "valid_at"))
    return Response(
        agent_api.search(
            request.auth,
            q.get("q", ""),
            mode=q.get("mode", "hybrid"),
            kind=q.get("kind"),
            space=q.get("space"),
            tags=_tags_param(request),
            limit=q.get("limit", 8),
            as_of=q.get("as_of"),
            valid_at=q.get("valid_at"),
        )
    )


@extend_schema(
    operation_id="list_records",
    summary="Recently approved records the agent can rely on",
    parameters=[
        _KIND,
        _SPACE,
        OpenApiParameter("tag", str),
        OpenApiParameter("since", str, description="YYYY-MM-DD or ISO date-time: approved on or after."),
        OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 100}, description="1-100, default 20."),
        _AS_OF,
        _VALID_AT,
    ],
    responses={200: s.ListSerializer, 400: _ERRORS[400], 401: _ERRORS[401], 429: _ERRORS[429]},
)
@api_view(["GET"])
def records(request):
    q = _query(request, ("kind", "space", "tag", "since", "limit", "as_of", "valid_at"))
    return Response(
        agent_api.list_records(
            request.auth,
            kind=q.get("kind"),
            space=q.get("space"),
            tag=q.get("tag"),
            since=q.get("since"),
            limit=q.get("limit", agent_api.LIST_LIMIT_DEFAULT),
            as_of=q.get("as_of"),
            valid_at=q.get("valid_at"),
        )
    )


@extend_schema(
    operation_id="read_record",
    summary="One record through the gate (or why it is withheld)",
    parameters=[_RECORD_ID, _AS_OF, _VALID_AT],
    responses={200: s.ReadSerializer, **_ERRORS},
)
@api_view(["GET"])
def record(request, record_id: str):
    q = _query(request, ("as_of", "valid_at"))
    return Response(agent_api.read(request.auth, record_id, as_of=q.get("as_of"), valid_at=q.get("valid_at")))


@extend_schema(
    operation_id="propose",
    summary="Propose a new record, or a revision (revises=<id>)",
    request=s.ProposeSerializer,
    examples=[
        OpenApiExample(
            "create",
            request_only=True,
            value={
                "title": "Billing API deploys",
                "kind": "fact",
                "space": "team",
                "tags": ["billing", "deploys"],
                "body": "The billing API deploys from the main branch every weekday at ten in the morning.",
                "reason": "Read it in the team handbook today.",
            },
        )
    ],
    responses={
        201: s.ProposalCreatedSerializer,
        409: OpenApiResponse(
            PolymorphicProxySerializer(
                component_name="ProposalConflict",
                serializers=[s.SimilarExistsSerializer, s.AlreadyRejectedSerializer, s.ErrorSerializer],
                resource_type_field_name=None,
            ),
            description="similar_exists or already_rejected (not stored), or an exact duplicate (error body).",
        ),
        **{k: v for k, v in _WRITE_ERRORS.items() if k != 409},
    },
)
@api_view(["POST"])
def proposals(request):
    data = _body(request, PROPOSE_FIELDS)
    fields = {name: data.get(name) for name in PROPOSE_FIELDS if name not in _FLAGS}
    answer = agent_api.propose_context(request.auth, **fields, **{name: data.get(name, False) for name in _FLAGS})
    code = status.HTTP_201_CREATED if answer["status"] == "pending" else status.HTTP_409_CONFLICT
    return Response(answer, status=code)


@extend_schema(
    operation_id="proposal_status",
    summary="What the reviewer decided about one of your proposals",
    parameters=[_PROPOSAL_ID],
    responses={200: s.ProposalSerializer, **_ERRORS},
)
@api_view(["GET"])
def proposal(request, proposal_id: str):
    _query(request)
    return Response(agent_api.proposal_status(request.auth, proposal_id))


@extend_schema(
    operation_id="dispute",
    summary="Dispute a record (withheld until a reviewer decides)",
    parameters=[_RECORD_ID],
    request=s.ReasonSerializer,
    examples=_REASON_EXAMPLE,
    responses={201: s.ProposalCreatedSerializer, **_WRITE_ERRORS},
)
@api_view(["POST"])
def dispute(request, record_id: str):
    data = _body(request, ("reason",))
    return Response(agent_api.dispute(request.auth, record_id, data.get("reason")), status=status.HTTP_201_CREATED)


@extend_schema(
    operation_id="propose_retirement",
    summary="Ask the reviewer to retire a record",
    parameters=[_RECORD_ID],
    request=s.ReasonSerializer,
    examples=_REASON_EXAMPLE,
    responses={201: s.ProposalCreatedSerializer, **_WRITE_ERRORS},
)
@api_view(["POST"])
def retirement(request, record_id: str):
    data = _body(request, ("reason",))
    return Response(
        agent_api.propose_retirement(request.auth, record_id, data.get("reason")), status=status.HTTP_201_CREATED
    )


@extend_schema(
    operation_id="withdraw_proposal",
    summary="Take back one of your own pending proposals",
    parameters=[_PROPOSAL_ID],
    request=s.NoteSerializer,
    examples=[
        OpenApiExample(
            "note", request_only=True, value={"note": "Proposed twice by mistake; the other proposal covers it."}
        )
    ],
    responses={
        200: s.WithdrawnSerializer,
        409: OpenApiResponse(s.ErrorSerializer, description="The proposal is no longer pending."),
        **{k: v for k, v in _WRITE_ERRORS.items() if k not in (403, 409)},
    },
)
@api_view(["POST"])
def withdrawal(request, proposal_id: str):
    data = _body(request, ("note",))
    return Response(agent_api.withdraw_proposal(request.auth, proposal_id, data.get("note")))


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
def unknown(request, rest: str = ""):
    """Any other path under /api/v1/: the JSON error shape, not Django's HTML 404 page."""
    raise NotFound(
        f"No API endpoint at {request.path[:80]!r}; the endpoints are listed at /api/v1/schema "
        "(readable at /api/v1/docs)."
    )


@extend_schema(
    operation_id="quality_check",
    summary="Read-only quality report in the agent's spaces",
    parameters=[_SPACE],
    responses={200: s.QualitySerializer, 400: _ERRORS[400], 401: _ERRORS[401], 429: _ERRORS[429]},
)
@api_view(["GET"])
def quality(request):
    q = _query(request, ("space",))
    return Response(agent_api.quality_check(request.auth, space=q.get("space")))
