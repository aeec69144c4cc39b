"""The limits on new OAuth clients: how many may be registered per address
and per hour, and how big a client's fields may be. Read before a client is
stored (reviews.actions.oauth.save_oauth_client) and by the registration
doors of the authorization server (mcp_bridge/oauth), which refuse early."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from ..oauth_models import (
    MAX_CLIENT_ID_CHARS,
    MAX_CLIENT_NAME_CHARS,
    MAX_METADATA_VALUE_CHARS,
    MAX_REDIRECT_URI_CHARS,
    MAX_REDIRECT_URIS,
    OAuthClient,
)

REGISTRATION_WINDOW = timedelta(hours=1)


def registration_refusal(address: str) -> tuple[str, int] | None:
    """Why a new client from ``address`` may not be stored now, and in how
    many seconds to try again; None if it may. New clients (dynamic
    registrations and first-seen metadata documents) are counted over the
    last hour: VETTED_OAUTH_REGISTRATIONS_PER_ADDRESS from one address,
    VETTED_OAUTH_REGISTRATIONS_PER_HOUR in total. The count is of stored
    rows, so every daemon over one database shares it."""
    now = timezone.now()
    recent = OAuthClient.objects.filter(created_at__gte=now - REGISTRATION_WINDOW)
    for rows, limit, whose in (
        (
            recent.filter(metadata__registered_from=address),
            settings.VETTED_OAUTH_REGISTRATIONS_PER_ADDRESS,
            "from your address",
        ),
        (recent, settings.VETTED_OAUTH_REGISTRATIONS_PER_HOUR, "in total"),
    ):
        if rows.count() >= limit:
            oldest = rows.order_by("created_at").values_list("created_at", flat=True)[: rows.count() - limit + 1]
            retry = int((list(oldest)[-1] + REGISTRATION_WINDOW - now).total_seconds()) + 1
            return (
                f"too many new OAuth clients {whose}: at most {limit} an hour. Try again in {retry} s, "
                "or reuse the client you registered before",
                max(retry, 1),
            )
    return None


def client_fields_problem(
    client_id: str, client_name: str, redirect_uris: list[str], metadata: dict[str, Any]
) -> str | None:
    """Why a client's fields are too big to keep, or None: the limits in
    reviews/oauth_models.py, for dynamic and metadata-document clients alike."""
    if len(client_id) > MAX_CLIENT_ID_CHARS:
        return f"the client_id is longer than {MAX_CLIENT_ID_CHARS} characters"
    if len(client_name) > MAX_CLIENT_NAME_CHARS:
        return f"client_name is longer than {MAX_CLIENT_NAME_CHARS} characters"
    if not redirect_uris or len(redirect_uris) > MAX_REDIRECT_URIS:
        return f"give between 1 and {MAX_REDIRECT_URIS} redirect_uris (got {len(redirect_uris)})"
    for uri in redirect_uris:
        if not isinstance(uri, str) or len(uri) > MAX_REDIRECT_URI_CHARS:
            return f"each redirect URI must be text of at most {MAX_REDIRECT_URI_CHARS} characters"
    for key, value in metadata.items():
        if not isinstance(value, str) or len(value) > MAX_METADATA_VALUE_CHARS:
            return f"{key} must be text of at most {MAX_METADATA_VALUE_CHARS} characters"
    return None
