"""What the OAuth endpoints check before the MCP SDK's handlers see a request:
they answer anyone without credentials, so each request must name a host this
server answers to, and a new client (registration or first-seen metadata
document) is counted against the registration limits of its address.

- ``require_allowed_host``: the Host header must match VETTED_ALLOWED_HOSTS,
  as Django checks it for the site and the SDK for /mcp (a DNS-rebinding page
  cannot reach the endpoints through a name of its own);
- ``registration_endpoint``: /register takes JSON only (so a page on another
  origin cannot send it without a CORS preflight, which only the origins in
  VETTED_OAUTH_REGISTER_ORIGINS pass), refuses an address past its limits
  with 429 and Retry-After, and passes the address to the provider.
"""

from __future__ import annotations

import ipaddress
from contextvars import ContextVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from reviews.actions import oauth_limits

# The address of the request being handled, for the provider's register_client
# (the SDK calls it without the request).
current_address: ContextVar[str] = ContextVar("oauth_client_address", default="")


def address_key(host: str) -> str:
    """The address registrations are counted against: an IPv4 address, or an
    IPv6 /64 (one host usually holds a whole /64, so counting single IPv6
    addresses would be no limit at all)."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host[:64]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip)


def client_address(scope) -> str:
    client = scope.get("client")
    return address_key(client[0]) if client else ""


def host_allowed(host_header: str) -> bool:
    domain, _port = split_domain_port(host_header)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def require_allowed_host(app):
    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not host_allowed(host):
                response = JSONResponse(
                    {
                        "error": "invalid_request",
                        "error_description": f"Host {host[:100]!r} is not a name this server answers to; "
                        "the operator lists them in VETTED_ALLOWED_HOSTS.",
                    },
                    status_code=400,
                )
                return await response(scope, receive, send)
        return await app(scope, receive, send)

    return guarded


def too_many(message: str, retry_after: int) -> Response:
    return JSONResponse(
        {"error": "too_many_requests", "error_description": message},
        status_code=429,
        headers={"Retry-After": str(retry_after)},
    )


def registration_endpoint(sdk_handle):
    async def endpoint(request: Request) -> Response:
        kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            return JSONResponse(
                {
                    "error": "invalid_client_metadata",
                    "error_description": f"send the registration as JSON (Content-Type: application/json), "
                    f"not {kind[:60] or 'no content type'!r}",
                },
                status_code=400,
            )
        address = client_address(request.scope)
        refusal = await sync_to_async(oauth_limits.registration_refusal)(address)
        if refusal:
            return too_many(*refusal)
        token = current_address.set(address)
        try:
            return await sdk_handle(request)
        finally:
            current_address.reset(token)

    return endpoint
