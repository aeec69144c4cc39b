"""The OAuth endpoints as one ASGI app (memory_site/asgi.py routes them here):

- ``/.well-known/oauth-authorization-server`` (RFC 8414), ``/authorize``,
  ``/token``, ``/register`` (RFC 7591, if VETTED_OAUTH_DCR) and ``/revoke``
  (RFC 7009): the MCP SDK's handlers over VettedAuthorizationProvider;
- ``/.well-known/oauth-protected-resource`` (RFC 9728) for the whole server,
  and its path forms ``…/mcp`` and ``…/api/v1`` for each endpoint.

The issuer is VETTED_PUBLIC_URL. Clients are public (token endpoint auth
"none", PKCE S256); a client_id that is an https URL is read from its
metadata document (cimd.py) instead of being registered.
"""

from __future__ import annotations

import html
from urllib.parse import parse_qs

from django.conf import settings
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route, request_response

from reviews.actions import oauth
from reviews.errors import RateLimited
from reviews.models import SPACES

from .challenge import WELL_KNOWN_AS, WELL_KNOWN_PR
from .cimd import DocumentRefused
from .doors import client_address, current_address, registration_endpoint, require_allowed_host
from .provider import VettedAuthorizationProvider, is_url_client_id

PATHS = ("/authorize", "/token", "/register", "/revoke")


def handles(path: str) -> bool:
    return path in (*PATHS, WELL_KNOWN_AS, WELL_KNOWN_PR) or path.startswith(WELL_KNOWN_PR + "/")


def _metadata() -> OAuthMetadata:
    base = settings.VETTED_PUBLIC_URL
    return OAuthMetadata.model_validate(
        {
            "issuer": base,
            "authorization_endpoint": base + "/authorize",
            "token_endpoint": base + "/token",
            "registration_endpoint": base + "/register" if settings.VETTED_OAUTH_DCR else None,
            "revocation_endpoint": base + "/revoke",
            "scopes_supported": SPACES,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
            "service_documentation": base + "/api/v1/docs",
        }
    )


def _resource_metadata(resource: str) -> ProtectedResourceMetadata:
    return ProtectedResourceMetadata.model_validate(
        {
            "resource": resource,
            "authorization_servers": [settings.VETTED_PUBLIC_URL],
            "scopes_supported": SPACES,
            "resource_name": "Vetted memory",
            "bearer_methods_supported": ["header"],
        }
    )


def _authorize_endpoint(provider: VettedAuthorizationProvider, sdk_handler: AuthorizationHandler):
    """The SDK's /authorize, after fetching a URL client_id's metadata document
    here so that a refused document is reported with its reason (the SDK would
    only say the client was not found)."""

    async def endpoint(request: Request) -> Response:
        params = request.query_params if request.method == "GET" else await request.form()
        client_id = params.get("client_id")
        if isinstance(client_id, str) and is_url_client_id(client_id):
            token = current_address.set(client_address(request.scope))
            try:
                await provider.metadata_client(client_id)
            except DocumentRefused as exc:
                text = html.escape(f"Cannot sign in this client: its metadata document at {client_id[:200]} {exc}.")
                return HTMLResponse(f"<!doctype html><title>Sign-in refused</title><p>{text}</p>", status_code=400)
            except RateLimited as exc:
                text = html.escape(f"Cannot sign in this client now: {exc.message}.")
                return HTMLResponse(
                    f"<!doctype html><title>Sign-in refused</title><p>{text}</p>",
                    status_code=429,
                    headers={"Retry-After": str(exc.retry_after)},
                )
            finally:
                current_address.reset(token)
        return await sdk_handler.handle(request)

    return endpoint


def _public_client_revocation(app):
    """The SDK's RevocationRequest requires a client_secret field, which a
    public client (all of Vetted's) has no reason to send (RFC 7009 §2.1):
    add an empty one to a form that lacks it, so the SDK's handler (and its
    client authentication, method "none") takes the request."""

    async def wrapped(scope, receive, send):
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        body = b"".join(chunks)
        if "client_secret" not in parse_qs(body.decode("latin-1")):
            body += b"&client_secret=" if body else b"client_secret="
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return wrapped


def build_oauth_app():
    provider = VettedAuthorizationProvider()
    authenticator = ClientAuthenticator(provider)
    metadata = _metadata()
    routes = [
        Route(
            WELL_KNOWN_AS,
            cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
        Route(
            "/authorize",
            _authorize_endpoint(provider, AuthorizationHandler(provider)),
            methods=["GET", "POST"],
        ),
        Route(
            "/token",
            cors_middleware(TokenHandler(provider, authenticator).handle, ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            "/revoke",
            CORSMiddleware(
                _public_client_revocation(request_response(RevocationHandler(provider, authenticator).handle)),
                allow_origins="*",
                allow_methods=["POST", "OPTIONS"],
                allow_headers=[MCP_PROTOCOL_VERSION_HEADER],
            ),
            methods=["POST", "OPTIONS"],
        ),
    ]
    if settings.VETTED_OAUTH_DCR:
        registration = RegistrationHandler(provider, ClientRegistrationOptions(enabled=True, valid_scopes=SPACES))
        # No "*" here, unlike the metadata, /token and /revoke: registering
        # stores a row, so a page on another origin may do it only from an
        # origin the operator listed (MCP's authorization spec asks for no CORS;
        # native and server-side clients need none).
        routes.append(
            Route(
                "/register",
                CORSMiddleware(
                    request_response(registration_endpoint(registration.handle)),
                    allow_origins=settings.VETTED_OAUTH_REGISTER_ORIGINS,
                    allow_methods=["POST", "OPTIONS"],
                    allow_headers=["Content-Type", MCP_PROTOCOL_VERSION_HEADER],
                ),
                methods=["POST", "OPTIONS"],
            )
        )
    for path, resource in (
        ("", settings.VETTED_PUBLIC_URL),
        (oauth.MCP_PATH, oauth.mcp_resource()),
        (oauth.API_PATH, oauth.api_resource()),
    ):
        handler = ProtectedResourceMetadataHandler(_resource_metadata(resource))
        routes.append(
            Route(WELL_KNOWN_PR + path, cors_middleware(handler.handle, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"])
        )
    return require_allowed_host(Starlette(routes=routes))
