"""Vetted's side of the MCP SDK's authorization server
(``mcp.server.auth.provider.OAuthAuthorizationServerProvider``).

The SDK's handlers parse and validate the requests (PKCE S256 only, redirect
URI match, code expiry, grant types, RFC 7009 revocation, error shapes); this
provider looks clients, codes and tokens up and hands every state change to
``reviews.actions.oauth``. The reviewer's consent happens in the site
(inbox/oauth_views.py): ``authorize`` only sends the browser there
with the request signed.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from urllib.parse import urlencode, urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from reviews.actions import oauth, oauth_limits
from reviews.errors import RateLimited, ValidationFailed, VettedError
from reviews.models import SPACES
from reviews.oauth_models import (
    MAX_CLIENT_ID_CHARS,
    MAX_REDIRECT_URIS,
    ClientRegistration,
    OAuthClient,
    OAuthCode,
    TokenKind,
)
from reviews.oauth_models import OAuthToken as TokenRow

from .cimd import DocumentRefused, Policy, client_from_document, fetch_document, redirect_uri_problem
from .doors import current_address

log = logging.getLogger(__name__)

# A metadata document is fetched again after this long (the spec lets servers
# cache it; a changed redirect URI takes effect within this time).
DOCUMENT_CACHE = timedelta(minutes=5)


class VettedCode(AuthorizationCode):
    pk: int


class VettedRefreshToken(RefreshToken):
    pk: int
    grant_id: str


class VettedAccessToken(AccessToken):
    grant_id: str


def is_url_client_id(client_id: str) -> bool:
    return client_id.startswith(("https://", "http://"))


def fetch_policy() -> Policy:
    """Loopback documents only while Vetted itself is served on loopback."""
    host = (urlsplit(settings.VETTED_PUBLIC_URL).hostname or "").lower()
    return Policy(allow_loopback_http=host in ("127.0.0.1", "localhost", "::1"))


def _info(row: OAuthClient) -> OAuthClientInformationFull:
    return OAuthClientInformationFull(
        client_id=row.client_id,
        client_name=row.client_name or None,
        redirect_uris=[AnyUrl(u) for u in row.redirect_uris],
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        # Any of Vetted's scopes may be asked for; the reviewer decides on the consent page.
        scope=" ".join(SPACES),
    )


@sync_to_async
def _client_row(client_id: str) -> OAuthClient | None:
    return OAuthClient.objects.filter(client_id=client_id).first()


@sync_to_async
def _save_document(client_id: str, kept: dict, document: dict, address: str) -> OAuthClient:
    try:
        return oauth.save_oauth_client(
            client_id,
            registration=ClientRegistration.METADATA_DOCUMENT,
            client_name=kept["client_name"],
            redirect_uris=kept["redirect_uris"],
            metadata={
                k: document[k] for k in ("client_uri", "logo_uri", "software_id") if isinstance(document.get(k), str)
            },
            address=address,
        )
    except ValidationFailed as exc:
        raise DocumentRefused(exc.fields.get("client", exc.message)) from None


def _fetch(client_id: str) -> tuple[dict, dict]:
    policy = fetch_policy()
    document = fetch_document(client_id, policy)
    return client_from_document(client_id, document, policy), document


class VettedAuthorizationProvider:
    """Implements the SDK's OAuthAuthorizationServerProvider protocol."""

    async def metadata_client(self, client_id: str) -> OAuthClientInformationFull:
        """The client a URL client_id names, from its (cached) metadata
        document; raises DocumentRefused saying why it cannot be used, and
        RateLimited when a first-seen document would pass the registration
        limits of the caller's address."""
        if len(client_id) > MAX_CLIENT_ID_CHARS:
            raise DocumentRefused(f"is longer than {MAX_CLIENT_ID_CHARS} characters")
        row = await _client_row(client_id)
        if row is not None and row.registration != ClientRegistration.METADATA_DOCUMENT:
            raise DocumentRefused("this client_id is registered another way")
        if row is None or row.fetched_at is None or timezone.now() - row.fetched_at > DOCUMENT_CACHE:
            # Off the database thread: a slow document must not hold up everyone's queries.
            address = current_address.get()
            if row is None:  # a new client: counted before anything is fetched
                refusal = await sync_to_async(oauth_limits.registration_refusal)(address)
                if refusal:
                    raise RateLimited(refusal[0], retry_after=refusal[1])
            kept, document = await sync_to_async(_fetch, thread_sensitive=False)(client_id)
            row = await _save_document(client_id, kept, document, address)
        return _info(row)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_url_client_id(client_id):
            try:
                return await self.metadata_client(client_id)
            except (DocumentRefused, RateLimited) as exc:
                log.info("oauth client metadata document refused: %s (%s)", exc, client_id[:200])
                # A token or revocation request keeps working on the last good copy
                # while the document cannot be fetched again; /authorize never gets
                # here with a refused document (app.py answers it with the reason).
                row = await _client_row(client_id)
                if row is not None and row.registration == ClientRegistration.METADATA_DOCUMENT:
                    return _info(row)
                return None
        row = await _client_row(client_id)
        if row is None or row.registration != ClientRegistration.DYNAMIC:
            return None
        return _info(row)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if not settings.VETTED_OAUTH_DCR:
            raise RegistrationError("invalid_client_metadata", "Dynamic registration is off (VETTED_OAUTH_DCR=0).")
        uris = [str(u) for u in client_info.redirect_uris or []]
        if len(uris) > MAX_REDIRECT_URIS:
            raise RegistrationError(
                "invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect_uris (got {len(uris)})"
            )
        for uri in uris:
            problem = redirect_uri_problem(uri)
            if problem:
                raise RegistrationError("invalid_redirect_uri", f"{uri[:200]}: {problem}")
        # Public clients only (RFC 7591 §3.2.1 lets the server replace requested
        # values): no client secret is minted or kept; PKCE protects the code.
        # The SDK answers with this same object, so the client learns it.
        client_info.token_endpoint_auth_method = "none"
        client_info.client_secret = None
        client_info.client_secret_expires_at = None
        client_info.scope = " ".join(SPACES)
        name = " ".join((client_info.client_name or "").split())[:200] or "Unnamed client"
        client_info.client_name = name
        try:
            await sync_to_async(oauth.save_oauth_client)(
                client_info.client_id,
                registration=ClientRegistration.DYNAMIC,
                client_name=name,
                redirect_uris=uris,
                metadata={"software_id": client_info.software_id} if client_info.software_id else {},
                address=current_address.get(),
            )
        except ValidationFailed as exc:
            raise RegistrationError("invalid_client_metadata", exc.fields.get("client", exc.message)) from None
        except RateLimited as exc:  # another daemon registered first (app.py answers the common case with 429)
            raise RegistrationError("invalid_client_metadata", exc.message) from None

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        try:
            resource = oauth.resource_for_request(params.resource)
        except ValidationFailed as exc:
            raise AuthorizeError("invalid_target", exc.fields.get("resource", exc.message)) from None
        signed = oauth.sign_authorization_request(
            {
                "client_id": client.client_id,
                "redirect_uri": str(params.redirect_uri),
                "redirect_uri_explicit": params.redirect_uri_provided_explicitly,
                "code_challenge": params.code_challenge,
                "state": params.state,
                "scopes": params.scopes or [],
                "resource": resource,
            }
        )
        return f"{settings.VETTED_PUBLIC_URL}/oauth/consent?{urlencode({'request': signed})}"

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str):
        row: OAuthCode | None = await sync_to_async(oauth.oauth_code)(client.client_id, authorization_code)
        if row is None:
            return None
        return VettedCode(
            pk=row.pk,
            code=authorization_code,
            scopes=list(row.grant.scopes),
            expires_at=row.expires_at.timestamp(),
            client_id=client.client_id,
            code_challenge=row.code_challenge,
            redirect_uri=AnyUrl(row.redirect_uri),
            redirect_uri_provided_explicitly=row.redirect_uri_explicit,
            resource=row.grant.resource,
            subject=row.grant.agent.public_id,
        )

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code) -> OAuthToken:
        code = await sync_to_async(OAuthCode.objects.get)(pk=authorization_code.pk)
        try:
            issued = await sync_to_async(oauth.exchange_oauth_code)(code)
        except VettedError as exc:
            raise TokenError("invalid_grant", exc.message) from None
        return _token(issued)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str):
        row: TokenRow | None = await sync_to_async(oauth.oauth_token)(refresh_token, TokenKind.REFRESH)
        if row is None or row.grant.client.client_id != client.client_id:
            return None
        return VettedRefreshToken(
            pk=row.pk,
            grant_id=row.grant.public_id,
            token=refresh_token,
            client_id=client.client_id,
            scopes=list(row.grant.scopes),
            expires_at=int(row.expires_at.timestamp()),
            resource=row.grant.resource,
            subject=row.grant.agent.public_id,
        )

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token, scopes) -> OAuthToken:
        row = await sync_to_async(TokenRow.objects.get)(pk=refresh_token.pk)
        try:
            issued = await sync_to_async(oauth.refresh_oauth_tokens)(row)
        except VettedError as exc:
            raise TokenError("invalid_grant", exc.message) from None
        return _token(issued)

    async def load_access_token(self, token: str):
        row: TokenRow | None = await sync_to_async(oauth.oauth_token)(token, TokenKind.ACCESS)
        if row is None:
            return None
        return VettedAccessToken(
            grant_id=row.grant.public_id,
            token=token,
            client_id=row.grant.client.client_id,
            scopes=list(row.grant.scopes),
            expires_at=int(row.expires_at.timestamp()),
            resource=row.grant.resource,
            subject=row.grant.agent.public_id,
        )

    async def revoke_token(self, token) -> None:
        await sync_to_async(oauth.revoke_oauth_grant)(
            token.grant_id, actor=oauth.AUTHORIZATION_SERVER, reason="client_request"
        )

    async def exchange_identity_assertion(self, client, params) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "The JWT bearer grant is not supported here.")


def _token(issued: oauth.IssuedTokens) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        expires_in=issued.expires_in,
        scope=" ".join(issued.scopes),
        refresh_token=issued.refresh_token,
    )
