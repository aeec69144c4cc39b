"""SSE priming and resumption (SEP-1699): each MCP session gets a small
event store of its own, so every SSE stream opens with a priming event (an
id and ``retry``, telling the client when to reconnect) and a client that
lost a stream can resume it with ``Last-Event-ID``.

One store per session, never shared: stream ids are JSON-RPC request ids,
which every session numbers from 1, so a shared store could replay one
agent's answers to another. Event ids are random, and the store keeps only
the newest events (a client that comes back too late re-sends its request).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

RETRY_MS = 2000  # the ``retry`` the priming event suggests
KEEP_EVENTS = 200  # per session


class SessionEventStore(EventStore):
    def __init__(self, keep: int = KEEP_EVENTS):
        self.keep = keep
        self._events: OrderedDict[str, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = secrets.token_hex(12)
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.keep:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if last_event_id not in self._events:
            return None
        stream_id = self._events[last_event_id][0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id
