"""Client ID Metadata Documents: a client_id that is an https URL names a JSON
document describing the client (draft-ietf-oauth-client-id-metadata-document,
the MCP 2025-11-25 way to identify a client without registering it).

Fetching it is a request to a URL a stranger chose, so the fetch is guarded:

- https only; plain http only to a loopback host, and only while Vetted itself
  is served on loopback (a local trial, where client and server share the
  machine); never a URL with credentials, a fragment, or no path;
- every address the name resolves to must be public (addresses.py: IP
  literals only, every embedded IPv4 form unwrapped, the special-purpose
  ranges refused; loopback only as above). The connection is made to the address that
  was checked (no second lookup a DNS rebinding could change), and the
  connected peer is checked again;
- no redirects, no proxy, a size limit (read in chunks, stopped past it),
  connect and read timeouts and an overall deadline.

The transport is httpcore2 (the HTTP core under the MCP SDK's httpx2) with a
network backend that does the resolving and checking; TLS (with certificate
and host name verification) is httpcore2's.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore2
from httpcore2._backends.sync import SyncBackend

from reviews.oauth_models import MAX_CLIENT_NAME_CHARS, MAX_REDIRECT_URI_CHARS, MAX_REDIRECT_URIS

from . import addresses

MAX_BYTES = 64 * 1024
CONNECT_SECONDS = 3.0
TOTAL_SECONDS = 5.0


class DocumentRefused(Exception):
    """The document was not fetched or not accepted; the message says why."""


@dataclass(frozen=True)
class Policy:
    allow_loopback_http: bool = False


def _address_refusal(address: str, policy: Policy) -> str | None:
    return addresses.refusal(address, allow_loopback=policy.allow_loopback_http)


def _check_url(url: str, policy: Policy) -> tuple[str, str, int, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise DocumentRefused("the client_id is not a valid URL") from None
    host = (parts.hostname or "").lower()
    if parts.username or parts.password or parts.fragment:
        raise DocumentRefused("a client_id URL may not carry credentials or a fragment")
    if not host or parts.path in ("", "/"):
        raise DocumentRefused("a client_id URL needs a host and a path (e.g. https://app.example/oauth/client.json)")
    loopback_host = addresses.is_loopback_literal(host)
    if parts.scheme == "http":
        if not (loopback_host and policy.allow_loopback_http):
            raise DocumentRefused("the metadata document must be served over https (http only on loopback, locally)")
    elif parts.scheme != "https":
        raise DocumentRefused(f"scheme {parts.scheme!r} is not allowed; use https")
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), target


class _CheckedBackend(SyncBackend):
    """Resolves the host itself, refuses non-public addresses, connects to the
    checked address and checks the connected peer once more."""

    def __init__(self, policy: Policy):
        self.policy = policy

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise DocumentRefused(f"the host {host!r} does not resolve") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:  # every answer must be acceptable, not only the first
            refusal = _address_refusal(address, self.policy)
            if refusal:
                raise DocumentRefused(f"{host} resolves to a refused address ({refusal})")
        last_error: OSError | None = None
        for info in infos:
            family, kind, proto, _name, sockaddr = info
            sock = socket.socket(family, kind, proto)
            sock.settimeout(timeout)
            try:
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                last_error = exc
                continue
            peer = str(sock.getpeername()[0])
            refusal = _address_refusal(peer, self.policy)
            if refusal:
                sock.close()
                raise DocumentRefused(f"connected to {refusal}")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            from httpcore2._backends.sync import SyncStream

            return SyncStream(sock)
        raise DocumentRefused(f"could not connect to {host}: {last_error}")


def fetch_document(url: str, policy: Policy) -> dict[str, Any]:
    """GET the metadata document at ``url`` under the guard; the parsed JSON
    object. Raises DocumentRefused saying what was wrong."""
    scheme, host, port, _target = _check_url(url, policy)
    deadline = time.monotonic() + TOTAL_SECONDS
    with httpcore2.ConnectionPool(
        ssl_context=ssl.create_default_context(), network_backend=_CheckedBackend(policy), retries=0
    ) as pool:
        try:
            with pool.stream(
                "GET",
                url,
                headers={"Accept": "application/json", "User-Agent": "Vetted OAuth"},
                extensions={"timeout": {"connect": CONNECT_SECONDS, "read": CONNECT_SECONDS, "write": CONNECT_SECONDS}},
            ) as response:
                if 300 <= response.status < 400:
                    raise DocumentRefused(
                        f"the document URL answered a redirect ({response.status}); none are followed"
                    )
                if response.status != 200:
                    raise DocumentRefused(f"the document URL answered HTTP {response.status}")
                body = _read_limited(response.iter_stream(), deadline)
        except httpcore2.TimeoutException:
            raise DocumentRefused("the document URL did not answer in time") from None
        except httpcore2.NetworkError as exc:
            raise DocumentRefused(f"could not fetch the document: {exc}") from None
        except httpcore2.ProtocolError as exc:
            raise DocumentRefused(f"the document URL did not speak HTTP properly: {exc}") from None
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DocumentRefused("the document is not JSON") from None
    if not isinstance(document, dict):
        raise DocumentRefused("the document is not a JSON object")
    return document


def _read_limited(chunks: Iterable[bytes], deadline: float) -> bytes:
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > MAX_BYTES:
            raise DocumentRefused(f"the document is larger than {MAX_BYTES} bytes")
        if time.monotonic() > deadline:
            raise DocumentRefused(f"the document took longer than {TOTAL_SECONDS:g} s to arrive")
    return bytes(body)


def client_from_document(url: str, document: dict[str, Any], policy: Policy) -> dict[str, Any]:
    """What Vetted keeps of a document: its name and redirect URIs, checked.
    The document must name itself (client_id equal to its URL) and use no
    client secret (a public client; PKCE protects the code)."""
    if document.get("client_id") != url:
        raise DocumentRefused("the document's client_id must be exactly its own URL")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise DocumentRefused(f"token_endpoint_auth_method {method!r} is not supported; Vetted takes public clients")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise DocumentRefused("the document must list redirect_uris")
    if len(uris) > MAX_REDIRECT_URIS:
        raise DocumentRefused(f"the document lists {len(uris)} redirect_uris; at most {MAX_REDIRECT_URIS}")
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            raise DocumentRefused(f"redirect URI {uri[:200]!r}: {problem}")
    name = document.get("client_name")
    if not isinstance(name, str) or not name.strip():
        raise DocumentRefused("the document must give a client_name")
    return {"client_name": " ".join(name.split())[:MAX_CLIENT_NAME_CHARS], "redirect_uris": uris}


def redirect_uri_problem(uri: str) -> str | None:
    """Why a redirect URI is not acceptable, or None: https; http only to a
    loopback host (RFC 8252 native apps); or a private-use scheme with a dot
    (RFC 8252 §7.1, e.g. com.example.app:/callback). Never a fragment."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "not a URL"
    if parts.fragment or len(uri) > MAX_REDIRECT_URI_CHARS:
        return f"no fragment, at most {MAX_REDIRECT_URI_CHARS} characters"
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http":
        host = (parts.hostname or "").lower()
        if addresses.is_loopback_literal(host):
            return None
        return "http is only allowed to a loopback IP literal (127.0.0.1, [::1]) or localhost"
    if "." in parts.scheme and parts.scheme.isascii():
        return None
    return "use https, http to loopback, or a private-use scheme such as com.example.app:"
