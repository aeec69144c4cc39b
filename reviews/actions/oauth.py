"""OAuth 2.1 grants for remote agents: the state changes behind the
authorization server (mcp_bridge/oauth) and the consent page.

The protocol (request parsing, PKCE verification, metadata, error shapes) is
the MCP SDK's (``mcp.server.auth``); this module keeps what it decides on:
which client asked, what the reviewer granted and as which agent, and the
codes and tokens issued for it, stored only as SHA-256 digests. An OAuth
client acts as an Agent for every other purpose; a grant may narrow the
agent's scopes, never widen them.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from .. import space_access
from ..errors import InvalidTransition, RateLimited, ValidationFailed
from ..models import Agent
from ..oauth_models import (
    MAX_CLIENT_NAME_CHARS,
    ClientRegistration,
    OAuthClient,
    OAuthCode,
    OAuthGrant,
    OAuthToken,
    TokenKind,
)
from ._common import Actor, SystemActor, audit, require_reviewer
from .agents import IMPORT_AGENT_NAME, OAUTH_ACCESS_PREFIX, TOKEN_PREFIX, create_agent, token_digest
from .oauth_limits import client_fields_problem, registration_refusal
from .spaces import check_grants

ACCESS_PREFIX = OAUTH_ACCESS_PREFIX
REFRESH_PREFIX = TOKEN_PREFIX + "rt_"
CODE_PREFIX = "vc_"
CODE_SECONDS = 120
AUTHORIZATION_SERVER = SystemActor("oauth")
MCP_PATH = "/mcp"
API_PATH = "/api/v1"


def mcp_resource() -> str:
    """The RFC 8707 resource identifier of /mcp (what MCP clients ask for)."""
    return settings.VETTED_PUBLIC_URL + MCP_PATH


def api_resource() -> str:
    return settings.VETTED_PUBLIC_URL + API_PATH


def resources() -> list[str]:
    """Every resource this server issues tokens for: the whole server, /mcp and /api/v1."""
    return [settings.VETTED_PUBLIC_URL, mcp_resource(), api_resource()]


def audiences_for(endpoint_resource: str) -> set[str]:
    """The token audiences an endpoint accepts: its own identifier or the
    whole server's; a token issued for anything else (another server, or the
    other endpoint) is refused there."""
    return {settings.VETTED_PUBLIC_URL, endpoint_resource}


def resource_for_request(requested: str | None) -> str:
    """The resource a grant is bound to: the one the client named (it must be
    one of ours: no token for another audience is ever issued), or /mcp."""
    if requested is None or requested == "":
        return mcp_resource()
    normalized = requested.rstrip("/") if requested.rstrip("/") == settings.VETTED_PUBLIC_URL else requested
    if normalized not in resources():
        raise ValidationFailed(
            {"resource": f"got {requested[:200]!r}; this server issues tokens only for: {', '.join(resources())}"}
        )
    return normalized


# --------------------------------------------------------------------------- the pending request

_REQUEST_SALT = "vetted.oauth.authorization-request"
REQUEST_SECONDS = 15 * 60


def sign_authorization_request(request: dict[str, Any]) -> str:
    """The authorization request as the SDK validated it, signed (Django's
    signing, with SECRET_KEY) for the trip through the consent page, so the
    page needs no stored state and no one can alter what it shows."""
    return signing.dumps(request, salt=_REQUEST_SALT, compress=True)


def read_authorization_request(signed: str) -> dict[str, Any]:
    """The request behind a consent link; raises ValidationFailed when it was
    altered or is older than REQUEST_SECONDS. Reads only."""
    try:
        value = signing.loads(signed or "", salt=_REQUEST_SALT, max_age=REQUEST_SECONDS)
    except signing.SignatureExpired:
        raise ValidationFailed(
            {"request": "this sign-in link has expired; start the sign-in from the client again"}
        ) from None
    except signing.BadSignature:
        raise ValidationFailed(
            {"request": "this sign-in link is not valid; start the sign-in from the client again"}
        ) from None
    if not isinstance(value, dict):
        raise ValidationFailed({"request": "this sign-in link is not valid"})
    return value


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]


# --------------------------------------------------------------------------- clients


def save_oauth_client(
    client_id: str,
    *,
    registration: str,
    client_name: str,
    redirect_uris: list[str],
    metadata: dict[str, Any],
    address: str = "",
) -> OAuthClient:
    """Record a client: a dynamically registered one (new), or the freshly
    fetched metadata document of a URL client_id (created or updated). Writes
    an audit event when something changed; a re-fetch of an unchanged
    document only stamps ``fetched_at``. A new client is refused
    (RateLimited) past the registration limits for ``address``, and any
    client whose fields are larger than the limits (ValidationFailed)."""
    if registration not in ClientRegistration.values:
        raise ValidationFailed(
            {"registration": f"got {registration!r}; allowed: {', '.join(ClientRegistration.values)}"}
        )
    client_name = client_name[:MAX_CLIENT_NAME_CHARS]
    problem = client_fields_problem(client_id, client_name, list(redirect_uris), metadata)
    if problem:
        raise ValidationFailed({"client": problem})
    with transaction.atomic():
        now = timezone.now()
        client = OAuthClient.objects.select_for_update().filter(client_id=client_id).first()
        fields = {"client_name": client_name, "redirect_uris": list(redirect_uris), "metadata": metadata}
        if client is not None:
            if client.registration != registration:
                raise InvalidTransition(f"Client {client_id[:100]!r} is already registered another way.")
            if "registered_from" in client.metadata:  # kept: it counts against that address for the hour
                fields["metadata"] = {**metadata, "registered_from": client.metadata["registered_from"]}
            changed = any(getattr(client, name) != value for name, value in fields.items())
            for name, value in fields.items():
                setattr(client, name, value)
            client.fetched_at = now
            client.save()
            if not changed:
                return client
            event = "oauth.client_updated"
        else:
            refusal = registration_refusal(address)  # again inside the write: two daemons, one count
            if refusal:
                raise RateLimited(refusal[0], retry_after=refusal[1])
            fields["metadata"] = {**metadata, "registered_from": address}
            client = OAuthClient.objects.create(
                client_id=client_id, registration=registration, fetched_at=now, **fields
            )
            event = "oauth.client_registered"
        audit(
            event,
            actor=AUTHORIZATION_SERVER,
            subject=("oauth_client", client_id[:150]),
            snippet=client_name,
            extra={"registration": registration, "redirect_uris": list(redirect_uris)[:10]},
        )
        return client


# --------------------------------------------------------------------------- consent


def _clean_scopes(scopes: Iterable[str], reviewer: Any) -> list[str]:
    """The spaces of a grant: among the reviewer's own (a grant,
    like an agent's, is only of spaces its person is a member of)."""
    chosen = sorted({str(s).strip().lower() for s in scopes if str(s).strip()})
    why = check_grants(reviewer, chosen)
    if why:
        raise ValidationFailed({"scopes": why})
    return chosen


def grant_oauth_consent(
    *,
    actor: Actor,
    client_id: str,
    redirect_uri: str,
    redirect_uri_explicit: bool,
    code_challenge: str,
    resource: str,
    scopes: Iterable[str],
    agent: Agent | str | None = None,
    new_agent_name: str = "",
) -> tuple[OAuthGrant, str]:
    """A reviewer lets a client act as an agent: an existing one (the grant's
    scopes must be among the agent's) or a new one created here with these
    scopes and no static token. Returns the grant and a single-use
    authorization code (raw; only its digest is stored), valid CODE_SECONDS."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        client = OAuthClient.objects.filter(client_id=client_id).first()
        if client is None:
            raise ValidationFailed({"client_id": "this client is not known here; start the sign-in again"})
        if redirect_uri not in client.redirect_uris:
            raise ValidationFailed({"redirect_uri": "not one the client registered"})
        resource = resource_for_request(resource)
        chosen = _clean_scopes(scopes, reviewer)
        if agent is not None and new_agent_name:
            raise ValidationFailed({"agent": "choose an existing agent or name a new one, not both"})
        if agent is None:
            if not new_agent_name:
                raise ValidationFailed({"agent": "choose an existing agent or name a new one"})
            agent, _none = create_agent(
                new_agent_name, spaces=chosen, actor=reviewer, source_tool=client.client_name[:64], with_token=False
            )
        else:
            name = agent if isinstance(agent, str) else agent.name
            found = Agent.objects.filter(name=name).first()
            # Only one's own agent: another person's does not exist here.
            if found is None or found.name == IMPORT_AGENT_NAME or found.owner_id != reviewer.pk:
                raise ValidationFailed({"agent": f"no agent named {name!r} can sign in"})
            if not found.is_active:
                raise ValidationFailed({"agent": f"agent {name!r} is revoked; name a new one"})
            outside = [s for s in chosen if s not in found.spaces]
            if outside:
                raise ValidationFailed(
                    {"scopes": f"{', '.join(outside)} not among {name!r}'s scopes ({', '.join(found.spaces)})"}
                )
            agent = found
        grant = OAuthGrant.objects.create(
            client=client, agent=agent, scopes=chosen, resource=resource, granted_by=reviewer.get_username()
        )
        code = CODE_PREFIX + secrets.token_urlsafe(32)
        OAuthCode.objects.create(
            digest=token_digest(code),
            grant=grant,
            code_challenge=code_challenge,
            redirect_uri=redirect_uri,
            redirect_uri_explicit=redirect_uri_explicit,
            expires_at=timezone.now() + timedelta(seconds=CODE_SECONDS),
        )
        audit(
            "oauth.granted",
            actor=reviewer,
            subject=agent,
            snippet=client.client_name or client.client_id,
            extra={
                "grant": grant.public_id,
                "client_id": client.client_id[:300],
                "scopes": chosen,
                "resource": resource,
            },
        )
        return grant, code


# --------------------------------------------------------------------------- codes and tokens


def oauth_code(client_id: str, code: str) -> OAuthCode | None:
    """The live code for this client, or None. A code presented again after it
    was used revokes its grant (RFC 6749 §4.1.2: the code leaked), then None."""
    row = (
        OAuthCode.objects.select_related("grant", "grant__client", "grant__agent")
        .filter(digest=token_digest(code or ""))
        .first()
    )
    if row is None or row.grant.client.client_id != client_id:
        return None
    if row.used_at is not None:
        revoke_oauth_grant(row.grant, actor=AUTHORIZATION_SERVER, reason="code_replayed")
        return None
    if row.grant.revoked_at is not None:
        return None
    return row


def _issue(grant: OAuthGrant) -> IssuedTokens:
    now = timezone.now()
    access = ACCESS_PREFIX + secrets.token_urlsafe(32)
    refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
    lifetime = settings.VETTED_OAUTH_ACCESS_TOKEN_SECONDS
    OAuthToken.objects.create(
        digest=token_digest(access), grant=grant, kind=TokenKind.ACCESS, expires_at=now + timedelta(seconds=lifetime)
    )
    OAuthToken.objects.create(
        digest=token_digest(refresh),
        grant=grant,
        kind=TokenKind.REFRESH,
        expires_at=now + timedelta(days=settings.VETTED_OAUTH_REFRESH_TOKEN_DAYS),
    )
    return IssuedTokens(access, refresh, lifetime, list(grant.scopes))


def _spend_for_tokens(row: OAuthCode | OAuthToken, spent: str, event: str) -> IssuedTokens:
    """The end of a code exchange and of a refresh, once: refuse a revoked
    agent, mark the locked code or refresh token spent (``spent`` = now),
    issue a new pair for its grant and write the AuditEvent. The caller
    holds the row's lock, in its transaction."""
    if not row.grant.agent.is_active:
        raise InvalidTransition(f"Agent {row.grant.agent.name!r} was revoked.")
    setattr(row, spent, timezone.now())
    row.save(update_fields=[spent])
    tokens = _issue(row.grant)
    audit(event, actor=AUTHORIZATION_SERVER, subject=row.grant.agent, extra={"grant": row.grant.public_id})
    return tokens


def exchange_oauth_code(code: OAuthCode) -> IssuedTokens:
    """Spend a code (already checked against its PKCE verifier and redirect
    URI by the token endpoint) for an access and a refresh token. A code can
    be spent once: a second exchange, even a concurrent one, is refused."""
    with transaction.atomic():
        row = OAuthCode.objects.select_for_update().select_related("grant", "grant__agent").get(pk=code.pk)
        if row.used_at is not None or row.grant.revoked_at is not None:
            raise InvalidTransition("This authorization code was already used.")
        if row.expires_at < timezone.now():
            raise InvalidTransition("This authorization code has expired.")
        return _spend_for_tokens(row, "used_at", "oauth.tokens_issued")


def oauth_token(raw: str, kind: str) -> OAuthToken | None:
    """A live (unexpired, unrevoked, not replaced) token of this kind, or None.
    A refresh token that was already replaced revokes its grant (reuse means
    it leaked: RFC 9700 §4.14.2), then None."""
    row = (
        OAuthToken.objects.select_related("grant", "grant__client", "grant__agent")
        .filter(digest=token_digest(raw or ""), kind=kind)
        .first()
    )
    if row is None or row.revoked_at is not None or row.grant.revoked_at is not None:
        return None
    if row.replaced_at is not None:
        revoke_oauth_grant(row.grant, actor=AUTHORIZATION_SERVER, reason="refresh_token_reused")
        return None
    if row.expires_at < timezone.now():
        return None
    return row


def refresh_oauth_tokens(refresh: OAuthToken) -> IssuedTokens:
    """Rotate: the refresh token is replaced by a new pair (the old one stops
    working, and presenting it again revokes the grant)."""
    with transaction.atomic():
        row = OAuthToken.objects.select_for_update().select_related("grant", "grant__agent").get(pk=refresh.pk)
        if row.replaced_at is not None or row.revoked_at is not None or row.grant.revoked_at is not None:
            raise InvalidTransition("This refresh token was already used or revoked.")
        return _spend_for_tokens(row, "replaced_at", "oauth.tokens_refreshed")


def revoke_oauth_grant(grant: OAuthGrant | str, *, actor: Actor, reason: str = "revoked") -> OAuthGrant:
    """Revoke a grant and every token issued under it, at once. A reviewer
    revokes from the agents page; the authorization server revokes on a
    client's request (RFC 7009), a replayed code or a reused refresh token.
    Revoking a revoked grant changes nothing (and writes nothing). A person
    may revoke only a grant of an agent they may manage (its owner, an owner
    of a space it is granted: space_access.sees_agent) or as a superuser;
    any other grant answers exactly as an unknown id."""
    with transaction.atomic():
        reviewer = None if isinstance(actor, SystemActor) else require_reviewer(actor)
        public_id = grant if isinstance(grant, str) else grant.public_id
        row = (
            OAuthGrant.objects.select_for_update().select_related("agent", "client").filter(public_id=public_id).first()
        )
        hidden = row is not None and reviewer is not None and not reviewer.is_superuser
        if hidden and not space_access.sees_agent(reviewer, row.agent):  # type: ignore[union-attr]
            row = None
        if row is None:
            raise ValidationFailed({"grant": f"no grant {public_id[:40]!r}"})
        if row.revoked_at is not None:
            return row
        now = timezone.now()
        row.revoked_at = now
        row.save(update_fields=["revoked_at"])
        OAuthToken.objects.filter(grant=row, revoked_at=None).update(revoked_at=now)
        audit(
            "oauth.revoked",
            actor=actor,
            subject=row.agent,
            snippet=row.client.client_name or row.client.client_id,
            extra={"grant": row.public_id, "reason": reason},
        )
        return row
