"""uvicorn's HTTP/1.1 protocol with two limits it does not keep on its own:

- **Headers in time.** uvicorn closes an idle keep-alive connection
  (timeout_keep_alive) but waits for ever for the headers of a request that
  has begun, on a new connection as on a kept-alive one: a client that sends
  half a request line and stops holds its connection, its buffers and a slot
  for good. Here a connection must complete each request's headers within
  VETTED_HEADER_SECONDS of opening (or of its first byte after a response,
  or of the keep-alive wait ending), else it is closed.
- **A cap on open connections.** uvicorn's limit_concurrency answers 503 to
  a request once that many connections or tasks are open, but still accepts
  and keeps every connection. Here a connection beyond VETTED_MAX_CONNECTIONS
  is closed as soon as it is accepted, so refused clients hold nothing.

``serve`` runs every worker with this protocol (``http=GuardedH11Protocol``);
the numbers are per process.
"""

from __future__ import annotations

import asyncio
import logging

import h11
from django.conf import settings
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


class GuardedH11Protocol(H11Protocol):
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > settings.VETTED_MAX_CONNECTIONS:
            log.warning(
                "Connection from %s closed: %s connections are open (VETTED_MAX_CONNECTIONS).",
                self.client[0] if self.client else "unknown",
                settings.VETTED_MAX_CONNECTIONS,
            )
            # Out of the count at once: connection_lost comes a loop turn
            # later, and a burst of accepts would otherwise close more.
            self.connections.discard(self)
            transport.close()
            return
        self._arm(settings.VETTED_HEADER_SECONDS)

    def data_received(self, data: bytes) -> None:
        if self._header_timer is None and self._awaiting_headers():
            self._arm(settings.VETTED_HEADER_SECONDS)  # the first byte of a request on a kept-alive connection
        super().data_received(data)
        if not self._awaiting_headers():
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._disarm()
        if self._awaiting_headers() and not self.transport.is_closing():
            # The keep-alive timer closes a silent connection; this one, one
            # that has started its next request and stalled.
            self._arm(self.timeout_keep_alive + settings.VETTED_HEADER_SECONDS)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(seconds, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._awaiting_headers() and not self.transport.is_closing():
            log.info(
                "Connection from %s closed: no complete request headers within the time allowed.",
                self.client[0] if self.client else "unknown",
            )
            self.transport.close()
