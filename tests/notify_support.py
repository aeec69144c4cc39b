"""Real receivers on loopback for the notification tests: an HTTP server that
keeps every request it gets (the webhook's receiver), and one that can be
taken down and brought back on the same port."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp_bridge.daemon_process import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class Receiver:
    """``url`` takes POSTs and answers 200; ``stop()`` makes it refuse
    connections, ``start()`` brings it back on the same port."""

    port: int = field(default_factory=free_port)
    got: list[Received] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0  # seconds to sit on a request after keeping it (a send "in flight")
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                receiver.got.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if receiver.delay:
                    time.sleep(receiver.delay)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def unique(self) -> dict[str, Received]:
        """What a receiver that drops duplicates by delivery id keeps."""
        kept: dict[str, Received] = {}
        for item in self.got:
            kept.setdefault(item.headers["x-vetted-delivery"], item)
        return kept
