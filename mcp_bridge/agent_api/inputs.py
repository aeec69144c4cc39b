"""Parsing what an agent sends: ids, filters, dates. Each helper either
returns the clean value or adds a message (what was wrong, what is allowed)
to ``errors``; ``raise_errors`` then reports every problem at once."""

from __future__ import annotations

from datetime import datetime

from retrieval.gate import Reader
from reviews import ids
from reviews import validation as v
from reviews.errors import ValidationFailed
from reviews.models import Agent


def reader_for(agent: Agent) -> Reader:
    return Reader.for_agent(agent)


def clean_record_id(value, field: str = "id") -> str:
    text = str(value or "").strip() if isinstance(value, str) else ""
    if not ids.RECORD_ID_RE.match(text):
        shown = repr(value)[:60] if value not in (None, "") else "nothing"
        raise ValidationFailed(
            {field: f"got {shown}; a record id looks like {ids.describe(ids.RECORD)} ({ids.EXAMPLE_RECORD_ID})"}
        )
    return text


def clean_proposal_id(value) -> str:
    text = str(value or "").strip() if isinstance(value, str) else ""
    if not ids.PROPOSAL_ID_RE.match(text):
        shown = repr(value)[:60] if value not in (None, "") else "nothing"
        raise ValidationFailed({"id": f"got {shown}; a proposal id looks like {ids.describe(ids.PROPOSAL)}"})
    return text


def optional_kind(value, errors: dict) -> list[str]:
    if value in (None, ""):
        return []
    try:
        return [v.clean_kind(value)]
    except ValidationFailed as exc:
        errors.update(exc.fields)
        return []


def optional_space(agent: Agent, value, errors: dict) -> list[str]:
    if value in (None, ""):
        return []
    space = str(value).strip().lower()
    if space not in agent.spaces:
        errors["space"] = v.unknown_space_message(value, agent.spaces)
        return []
    return [space]


def checked_tags(value, errors: dict, field: str = "tags") -> list[str]:
    if value in (None, "", []):
        return []
    try:
        return v.clean_tags(value)
    except ValidationFailed as exc:
        errors[field] = exc.fields.get("tags", exc.message)
        return []


def clean_since(value, errors: dict) -> datetime | None:
    try:
        return v.clean_moment("since", value)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    return None


def raise_errors(errors: dict) -> None:
    if errors:
        raise ValidationFailed(errors)
