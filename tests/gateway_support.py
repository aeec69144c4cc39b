"""A real daemon (`manage.py serve`) on a free port, over the test database.

The daemon is a separate process that opens the same SQLite file as the
test (WAL lets both in), so tests must use committed data: use the
``transactional_db`` fixture (the module's fixtures do). The test process
plays the reviewer through reviews.actions; agents talk to the daemon over
HTTP exactly as a client would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import connection

from mcp_bridge.daemon_process import DaemonFailed, free_port, start_serve, wait_for_health  # noqa: F401 (re-exported for tests)

PROJECT = Path(__file__).resolve().parent.parent


@dataclass
class Daemon:
    base: str
    process: subprocess.Popen
    log_path: Path

    @property
    def mcp_url(self) -> str:
        return self.base + "/mcp"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def postgres_test_url() -> str:
    """VETTED_DATABASE_URL with the test database's name (PostgreSQL)."""
    parts = urlsplit(os.environ["VETTED_DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + str(settings.DATABASES["default"]["NAME"])))


@contextmanager
def running_daemon(tmp_dir: Path, *, port: int | None = None, args: tuple[str, ...] = (), **env_overrides: str):
    """`manage.py serve` on the test database, with the fake embedder. On
    PostgreSQL, the test database on the test server."""
    port = port or free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "VETTED_DB_PATH": str(settings.DATABASES["default"]["NAME"]),
        "VETTED_EMBEDDER": "fake",
    }
    if connection.vendor == "postgresql":
        env["VETTED_DATABASE_URL"] = postgres_test_url()
    env.update(env_overrides)
    log_path = tmp_dir / f"serve-{port}.log"
    process = start_serve(PROJECT, env, port, log_path, args=args)
    daemon = Daemon(f"http://127.0.0.1:{port}", process, log_path)
    try:
        wait_for_health(daemon.base, process)
        yield daemon
    except DaemonFailed as exc:
        raise DaemonFailed(f"{exc}\n{daemon.log()[-3000:]}") from None
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def http(
    method: str, url: str, *, token: str | None = None, body=None, headers: dict | None = None, raw: bytes | None = None
):
    """One HTTP request; returns (status, headers, parsed JSON or text)."""
    all_headers = dict(headers or {})
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        all_headers.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, response_headers, payload = response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        status, response_headers, payload = exc.code, exc.headers, exc.read()
    text = payload.decode("utf-8", "replace")
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = text
    return status, {k.lower(): v for k, v in response_headers.items()}, parsed


@contextmanager
def token_injecting_proxy(upstream: str, token: str):
    """An HTTP proxy on a free loopback port that adds the agent's bearer
    token to every request and passes everything else through unchanged
    (the Host and Origin headers included, so DNS-rebinding checks still
    see what the client sent). For tools that cannot send headers, such as
    the MCP conformance suite."""
    import http.client
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlsplit

    target = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # close-delimited bodies: SSE streams pass through as they come

        def _relay(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in ("authorization", "connection", "content-length"):
                    conn.putheader(name, value)
            conn.putheader("Authorization", f"Bearer {token}")
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            self.send_response_only(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            self.end_headers()
            while chunk := response.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
            conn.close()

        do_GET = do_POST = do_DELETE = _relay

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
