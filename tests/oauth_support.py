"""Helpers both OAuth test files use (tests/test_oauth.py in process,
tests/test_oauth_browser.py against the daemon): a PKCE pair and a loopback
server for Client ID Metadata Documents (a thread, not a process)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@contextmanager
def document_server() -> Iterator[tuple[str, dict]]:
    """(base URL, routes): put ``path -> (status, headers, body)`` into the
    routes; anything else is a 404."""
    routes: dict[str, tuple[int, dict, bytes]] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            status, headers, body = routes.get(self.path, (404, {}, b""))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", routes
    finally:
        server.shutdown()
