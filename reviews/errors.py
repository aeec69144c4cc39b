"""Domain errors raised by reviews.actions.

Every interface (views, REST, MCP, admin, commands) turns these into its own
kind of error message; the message itself is written for the person or agent
that sent the request: what was wrong and what is allowed.
"""

from __future__ import annotations

from typing import Any


class VettedError(Exception):
    """Base class. ``code`` is stable and machine-readable."""

    code = "error"

    def __init__(self, message: str, **details: Any):
        super().__init__(message)
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class ValidationFailed(VettedError):
    """Input broke the write rules. ``fields`` maps field name -> message."""

    code = "invalid"

    def __init__(self, fields: dict[str, str]):
        self.fields = dict(fields)
        summary = "; ".join(f"{name}: {msg}" for name, msg in self.fields.items())
        super().__init__(summary, fields=self.fields)


class InvalidTransition(VettedError):
    """The object is not in a state that allows this action."""

    code = "invalid_transition"


class DuplicateContent(VettedError):
    """Identical content already exists (an approved record or a pending proposal)."""

    code = "duplicate"

    def __init__(self, message: str, *, existing_id: str):
        super().__init__(message, existing_id=existing_id)
        self.existing_id = existing_id


class AlreadyRejected(VettedError):
    """The same agent sent again, unchanged, what a reviewer already rejected
    : not stored unless it says why (resubmit)."""

    code = "already_rejected"

    def __init__(self, message: str, *, earlier: Any):  # a Proposal (models import errors)
        super().__init__(message, existing_id=earlier.public_id)
        self.earlier = earlier


class NotFound(VettedError):
    code = "not_found"


class SpaceNotAllowed(VettedError):
    code = "space_not_allowed"


class ChecksumMismatch(VettedError):
    """The record's text no longer matches what was approved."""

    code = "edited_since_approval"


class Unauthorized(VettedError):
    """No usable agent token: missing, malformed, unknown or revoked."""

    code = "unauthorized"


class RateLimited(VettedError):
    """Too many calls of one sort from one agent in a minute; ``retry_after`` is in whole seconds."""

    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message, retry_after=retry_after)
        self.retry_after = retry_after


class LimitReached(VettedError):
    """An agent holds as many of something as it may (open disputes); waiting
    does not help, a reviewer's decision does."""

    code = "limit_reached"
