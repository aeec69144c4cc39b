"""Resource subscriptions on both protocol revisions: ``resources/subscribe``
(2025-11-25, notifications on the session's stream) and
``subscriptions/listen`` (2026-07-28, the listen request's own stream).

How the daemon learns of a change: every state change writes an
AuditEvent, and scans write outbox rows (a record gone overdue or edited
outside Vetted), in the same transaction as the change, whichever process
made it (the inbox in this daemon, a management command in another). While
anyone is subscribed, ``ChangeFeed`` reads the rows newer than the last it
saw, once a second. The actions know nothing of this (they may not import
the gateway: pyproject.toml's import contracts).

What a subscriber hears goes through agent_api.change_notice: an agent is
told about a uri only when what it could read there changed (its own
proposal decided, with the reviewer's note; a record revised, retired,
disputed or overdue), never about records outside its spaces, other
agents' proposals, or activity it cannot see. Subscribing to anything is
acknowledged alike, so a subscription is no oracle.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from django.conf import settings
from django.db import close_old_connections
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    EmptyResult,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    SubscribeRequestParams,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)

from mcp_bridge import agent_api

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
MAX_URIS = 200  # per subscriber (a session, or one listen stream)
MAX_LISTENERS = 1024

Deliver = Callable[[str, dict], Awaitable[None]]


def _db(fn, *args):
    """Run ORM work in a worker thread and give its connection back."""

    def run():
        close_old_connections()
        try:
            return fn(*args)
        finally:
            close_old_connections()

    return anyio.to_thread.run_sync(run)


MAX_URI = 500


def check_uri(uri: str) -> str:
    """Any uri is accepted alike (one that names nothing simply never fires),
    so subscribing tells nothing; only its length is bounded."""
    uri = str(uri)
    if not uri or len(uri) > MAX_URI:
        raise MCPError(INVALID_PARAMS, f"[invalid] uri: got {len(uri)} characters; a resource uri of 1-{MAX_URI}")
    return uri


@dataclass(eq=False)
class Subscriber:
    """One stream's subscriptions, bound to the credential that opened it:
    every notice is decided with that credential's spaces, and the stream
    ends (``end``) once the credential does (revoked, expired, rotated)."""

    credential: agent_api.Credential
    deliver: Deliver
    told: dict[str, str | None] = field(default_factory=dict)  # uri -> fingerprint last told (None: nothing)
    alive: Callable[[], bool] = lambda: True
    end: Callable[[], None] = lambda: None

    @property
    def agent_id(self) -> str:
        return self.credential.agent_id


class ChangeFeed:
    """Polls the audit log and the outbox while anyone is subscribed and
    tells each subscriber what it may hear (see the module docstring)."""

    def __init__(self, poll_seconds: float = POLL_SECONDS):
        self.poll_seconds = poll_seconds
        self.subscribers: set[Subscriber] = set()
        self._task: asyncio.Task | None = None
        self._after: tuple[int, int] | None = None
        self._seen: set[tuple[str, int]] = set()  # rows told near the cursor (late commits, PostgreSQL)

    async def add(self, subscriber: Subscriber, uri: str) -> None:
        if uri in subscriber.told:
            return
        if len(subscriber.told) >= MAX_URIS:
            raise MCPError(INVALID_PARAMS, f"[invalid] uri: at most {MAX_URIS} subscriptions at a time")
        if self._task is None or self._task.done():  # nobody was listening: changes from now on
            self._after = await _db(agent_api.newest_change_ids)
            self._seen = await _db(agent_api.seen_below, *self._after)
        notice = await _db(agent_api.change_notice, subscriber.credential, uri)
        subscriber.told[uri] = notice[0] if notice else None
        self.subscribers.add(subscriber)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._poll())

    def drop(self, subscriber: Subscriber, uri: str | None = None) -> None:
        if uri is None:
            subscriber.told.clear()
        else:
            subscriber.told.pop(uri, None)
        if not subscriber.told:
            self.subscribers.discard(subscriber)

    async def _poll(self) -> None:
        while self.subscribers:
            await asyncio.sleep(self.poll_seconds)
            for gone in [s for s in self.subscribers if not s.alive()]:
                self.drop(gone)
            try:
                await self.end_lapsed()
                await self.check()
            except Exception:  # a bad pass must not end every subscription
                log.exception("the MCP change feed failed one pass; trying again")

    async def end_lapsed(self) -> None:
        """End every stream whose credential ended since the last pass (a
        sign-in revoked, expired or rotated; a token replaced; an agent
        revoked): it hears nothing more, and its stream is closed."""
        by_credential: dict[agent_api.Credential, list[Subscriber]] = {}
        for subscriber in self.subscribers:
            by_credential.setdefault(subscriber.credential, []).append(subscriber)
        for credential, subscribers in by_credential.items():
            if await _db(agent_api.credential_holds, credential):
                continue
            for subscriber in subscribers:
                self.drop(subscriber)
                try:
                    subscriber.end()
                except Exception:  # already gone
                    log.info("an MCP stream whose credential ended was already closed")

    async def check(self) -> None:
        """One pass: read the newer rows, tell whoever may hear of them."""
        assert self._after is not None
        uris, *after = await _db(agent_api.changed_uris, *self._after, self._seen)
        self._after = (after[0], after[1])
        for uri in uris:
            for subscriber in [s for s in self.subscribers if uri in s.told]:
                notice = await _db(agent_api.change_notice, subscriber.credential, uri)
                if notice is None or notice[0] == subscriber.told.get(uri):
                    continue
                subscriber.told[uri] = notice[0]
                try:
                    await subscriber.deliver(uri, notice[1])
                except Exception:  # the client went away: forget it
                    log.info("dropped an MCP subscriber whose stream ended")
                    self.drop(subscriber)


# --------------------------------------------------------------------------- 2025-11-25: resources/subscribe


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str:
    headers = getattr(ctx.request, "headers", None) or {}
    return str(headers.get(MCP_SESSION_ID_HEADER, ""))


class LegacySubscriptions:
    """``resources/subscribe`` and ``resources/unsubscribe`` handlers; one
    Subscriber per MCP session (its ``Connection``), told on the session's
    standalone stream. Held weakly: a session that ends without
    unsubscribing is forgotten by the feed's next pass."""

    def __init__(
        self,
        feed: ChangeFeed,
        credential_of: Callable[..., Awaitable[agent_api.Credential]],
        end_session: Callable[[str], None] = lambda session_id: None,
    ):
        self.feed = feed
        self.credential_of = credential_of
        self.end_session = end_session
        self._by_connection: weakref.WeakKeyDictionary[Any, Subscriber] = weakref.WeakKeyDictionary()

    async def subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        uri = check_uri(params.uri)
        credential = await self.credential_of(ctx)
        connection = ctx.session._connection  # the session's, not this request's
        subscriber = self._by_connection.get(connection)
        if subscriber is None or subscriber.credential != credential:
            if subscriber is not None:  # a new token on the session: its old subscriptions end with the old one
                self.feed.drop(subscriber)
            ref = weakref.ref(connection)
            session_id = _session_id(ctx)

            async def deliver(uri: str, meta: dict) -> None:
                alive = ref()
                if alive is None:
                    raise LookupError("the session ended")
                await alive.notify("notifications/resources/updated", {"uri": uri, "_meta": meta})

            subscriber = Subscriber(
                credential, deliver, alive=lambda: ref() is not None, end=lambda: self.end_session(session_id)
            )
            self._by_connection[connection] = subscriber
        await self.feed.add(subscriber, uri)
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        await self.credential_of(ctx)  # a valid token, counted by the read limit like any read
        connection = ctx.session._connection
        subscriber = self._by_connection.get(connection)
        if subscriber is not None:
            self.feed.drop(subscriber, str(params.uri))
            if not subscriber.told:
                self._by_connection.pop(connection, None)
        return EmptyResult()


# --------------------------------------------------------------------------- 2026-07-28: subscriptions/listen


class Listen:
    """``subscriptions/listen``: the SDK's ListenHandler protocol (ack first,
    every frame stamped with the subscription id, ends when the client goes
    away), with resource events from the change feed, per agent."""

    def __init__(self, feed: ChangeFeed, credential_of: Callable[..., Awaitable[agent_api.Credential]]):
        self.feed = feed
        self.credential_of = credential_of
        self.open = 0
        self.open_by_agent: dict[str, int] = {}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen requires a request id")
        if self.open >= MAX_LISTENERS:
            raise MCPError(INTERNAL_ERROR, f"Too many open listen streams on this server (at most {MAX_LISTENERS})")
        wanted = params.notifications
        uris = [check_uri(uri) for uri in wanted.resource_subscriptions or ()]
        credential = await self.credential_of(ctx, max(1, len(uris)))
        agent_id = credential.agent_id
        # Per agent, as sessions are: one agent cannot hold every stream there is.
        cap = settings.VETTED_MCP_SESSIONS_PER_AGENT
        if self.open_by_agent.get(agent_id, 0) >= cap:
            raise MCPError(
                INVALID_REQUEST,
                f"[limit_reached] at most {cap} open listen streams per agent (VETTED_MCP_SESSIONS_PER_AGENT); "
                "close one first",
            )
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, receive = anyio.create_memory_object_stream[tuple[str, dict]](256)

        async def deliver(uri: str, extra: dict) -> None:
            send.send_nowait((uri, extra))  # a full buffer raises: the feed drops this stream

        subscriber = Subscriber(credential, deliver, end=send.close)
        self.open += 1
        self.open_by_agent[agent_id] = self.open_by_agent.get(agent_id, 0) + 1
        try:
            for uri in uris:
                await self.feed.add(subscriber, uri)
            # Every kind asked for is honoured (list changes simply never fire:
            # the lists are fixed or per agent), and every uri alike.
            honored = SubscriptionFilter(
                tools_list_changed=True if wanted.tools_list_changed else None,
                prompts_list_changed=True if wanted.prompts_list_changed else None,
                resources_list_changed=True if wanted.resources_list_changed else None,
                resource_subscriptions=uris or None,
            )
            await ctx.session.send_notification(
                SubscriptionsAcknowledgedNotification(
                    params=SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
                ),
                related_request_id=subscription_id,
            )
            async for uri, extra in receive:
                await ctx.session.send_notification(
                    ResourceUpdatedNotification(params=ResourceUpdatedNotificationParams(uri=uri, _meta=extra | meta)),
                    related_request_id=subscription_id,
                )
        finally:
            self.open -= 1
            left = self.open_by_agent.pop(agent_id, 1) - 1
            if left:
                self.open_by_agent[agent_id] = left
            self.feed.drop(subscriber)
            send.close()
            receive.close()
        return SubscriptionsListenResult(_meta=meta)
