"""One error shape for every API failure: {"error": code, "message": text,
...details}, with the HTTP status that matches the domain error."""

from __future__ import annotations

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from reviews.errors import (
    ChecksumMismatch,
    DuplicateContent,
    InvalidTransition,
    LimitReached,
    NotFound,
    RateLimited,
    SpaceNotAllowed,
    Unauthorized,
    ValidationFailed,
    VettedError,
)

STATUS = {
    ValidationFailed: status.HTTP_400_BAD_REQUEST,
    Unauthorized: status.HTTP_401_UNAUTHORIZED,
    SpaceNotAllowed: status.HTTP_403_FORBIDDEN,
    NotFound: status.HTTP_404_NOT_FOUND,
    DuplicateContent: status.HTTP_409_CONFLICT,
    InvalidTransition: status.HTTP_409_CONFLICT,
    ChecksumMismatch: status.HTTP_409_CONFLICT,
    LimitReached: status.HTTP_409_CONFLICT,
    RateLimited: status.HTTP_429_TOO_MANY_REQUESTS,
}

_DRF_CODES = {
    exceptions.AuthenticationFailed: "unauthorized",
    exceptions.NotAuthenticated: "unauthorized",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.ParseError: "bad_request",
    exceptions.Throttled: "rate_limited",
    exceptions.ValidationError: "invalid",
}


def http_error(exc: VettedError) -> tuple[int, dict, dict[str, str]]:
    """Status, JSON body and headers for a domain error, for the REST API and
    the /mcp guard alike: the one place a RateLimited becomes 429 + Retry-After."""
    code = next((s for cls, s in STATUS.items() if isinstance(exc, cls)), status.HTTP_400_BAD_REQUEST)
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else {}
    return code, exc.as_dict(), headers


def exception_handler(exc, context):
    if isinstance(exc, VettedError):
        code, body, headers = http_error(exc)
        return Response(body, status=code, headers=headers)
    handled = drf_handler(exc, context)
    if handled is None:
        return None  # a bug: let Django log it and answer 500
    response = handled
    error = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), "error")
    detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
    message = detail if isinstance(detail, str) else str(detail)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        message = f"{message} Send JSON with 'Content-Type: application/json'."
    response.data = {"error": error, "message": str(message)}
    return response
