"""The sender: outbox rows become messages (``Delivery``), sent at least once.

One pass (``run_once``) does three things:

1. ``batch``: the events not yet in a message become one message per
   configured channel. It waits until no event came for
   VETTED_NOTIFY_QUIET_SECONDS (a burst is one message) and makes at most
   one message per VETTED_NOTIFY_MIN_SECONDS, except for disputes, which go
   out at once. Events outside VETTED_NOTIFY_SPACES (by slug or kind), and proposals decided
   before they were told, are dropped. The payload is frozen in the row, so
   every retry is the same message under the same delivery id. Who is
   told what: notify/recipients.py (an e-mail per person and their spaces).
2. ``send_due``: claims the messages whose time has come (a lease, so two
   senders never send the same one at once; with several daemons on one
   PostgreSQL database, ``batch`` takes a turn so one sender batches at a
   time, and the claim skips rows another sender has locked) and sends them; a failure is
   retried with exponential backoff for RETRY_FOR, then marked failed with
   its last error.
3. the daily scan (``reviews.actions.scan_for_notices``) when the day changed.

Killed between the commit and the send, nothing is lost: the events wait
unbatched, or their message waits pending or claimed by a process that no
longer exists (``release_dead_claims`` frees those at start; any other claim
frees itself when its lease ends). A message the receiver got just before
the kill is sent again with the same id, which the receiver drops.

This module is the one writer of ``Delivery`` rows and of ``batched_at``:
bookkeeping of the notifier itself, never state of the domain.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from dbengine import database_engine
from reviews.models import Proposal, ProposalState

from . import channels, recipients, refusals, wake
from .models import URGENT_EVENTS, Channel, Delivery, DeliveryState, Event, OutboxEvent

log = logging.getLogger(__name__)

LEASE = timedelta(seconds=120)
RETRY_FOR = timedelta(days=1)
FIRST_RETRY_SECONDS = 10
LONGEST_WAIT_SECONDS = 3600
BATCH_LIMIT = 5000  # events read per pass; the rest wait for the next one
OWNER = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass
class PassResult:
    made: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    retrying: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def backoff(attempts: int) -> timedelta:
    """The wait after the ``attempts``-th failure: 10 s, 20 s, 40 s, … at most an hour."""
    return timedelta(seconds=min(LONGEST_WAIT_SECONDS, FIRST_RETRY_SECONDS * 2 ** max(0, attempts - 1)))


# --------------------------------------------------------------------------- batching


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_of(items: list[dict[str, str]]) -> str:
    """'12 new proposals from 3 agents, 2 disputes': counts, our own words."""
    kinds = Counter(item["action"] for item in items)
    proposals = [i for i in items if i["action"] in ("create", "revise", "retire")]
    parts = []
    if proposals:
        agents = {i["agent"] for i in proposals if i["agent"]}
        part = _plural(len(proposals), "new proposal")
        parts.append(part + (f" from {_plural(len(agents), 'agent')}" if agents else ""))
    for action, one, many in (
        ("dispute", "dispute", "disputes"),
        ("dispute_burst", "agent disputing many records", "agents disputing many records"),
        ("due", "record due for review", "records due for review"),
        ("changed_outside", "record changed outside Vetted", "records changed outside Vetted"),
        ("rate_limited", "agent refused by a rate limit", "agents refused by a rate limit"),
        ("test", "test notification", "test notifications"),
    ):
        if kinds[action]:
            parts.append(f"{kinds[action]} {one if kinds[action] == 1 else many}")
    return ", ".join(parts) or "Nothing new"


def _wanted(events: list[OutboxEvent]) -> tuple[list[OutboxEvent], list[OutboxEvent]]:
    """(to tell, to drop): outside the channels' spaces, or a proposal
    already decided or withdrawn, is dropped."""
    spaces = recipients.notified_slugs(e.space for e in events if e.space)
    asked = [e.subject_id for e in events if e.event in (Event.PROPOSAL_CREATED, Event.DISPUTE_CREATED)]
    pending = set(
        Proposal.objects.filter(public_id__in=asked, state=ProposalState.PENDING).values_list("public_id", flat=True)
    )
    keep: list[OutboxEvent] = []
    drop: list[OutboxEvent] = []
    for e in events:
        decided = e.event in (Event.PROPOSAL_CREATED, Event.DISPUTE_CREATED) and e.subject_id not in pending
        (drop if decided or (e.space and e.space not in spaces) else keep).append(e)
    return keep, drop


def _urgent(events: list[OutboxEvent], now: datetime) -> list[OutboxEvent]:
    """The urgent events that may skip the spacing now: at most one urgent
    message per agent in VETTED_NOTIFY_URGENT_PER_AGENT_SECONDS (an agent
    that keeps disputing and withdrawing is told with the next regular
    message, not once per cycle)."""
    urgent = [e for e in events if e.event in URGENT_EVENTS]
    window = settings.VETTED_NOTIFY_URGENT_PER_AGENT_SECONDS
    if not urgent or not window:
        return urgent
    recent = Delivery.objects.filter(event__in=list(URGENT_EVENTS), created_at__gte=now - timedelta(seconds=window))
    told = {item.get("agent") for payload in recent.values_list("payload", flat=True) for item in payload["items"]}
    return [e for e in urgent if e.agent not in told]


def batch(now: datetime | None = None) -> list[Delivery]:
    """Make the messages that are due now (see the module docstring)."""
    now = now or timezone.now()
    with transaction.atomic():
        if not database_engine().take_turn(connection, "notify-batch"):
            return []  # another daemon's sender is batching these very events: one message, not two
        events = list(OutboxEvent.objects.filter(batched_at=None).order_by("id")[:BATCH_LIMIT])
        keep, drop = _wanted(events)
        targets = channels.configured()
        if not targets:
            drop, keep = drop + keep, []  # nobody to tell: the feed and the inbox still show it all
        if drop:
            OutboxEvent.objects.filter(pk__in=[e.pk for e in drop]).update(batched_at=now)
        counted = refusals.take()
        if not targets or not (keep or counted):
            refusals.give_back(counted)
            return []
        quiet = timedelta(seconds=settings.VETTED_NOTIFY_QUIET_SECONDS)
        if keep and now - max(e.created_at for e in keep) < quiet:
            refusals.give_back(counted)
            return []  # a burst may still be arriving
        last = (
            Delivery.objects.exclude(event=Event.DISPUTE_CREATED).aggregate(last=Max("created_at"))["last"]
            if settings.VETTED_NOTIFY_MIN_SECONDS
            else None
        )
        spaced = last is None or now - last >= timedelta(seconds=settings.VETTED_NOTIFY_MIN_SECONDS)
        take = keep if spaced else _urgent(keep, now)
        if not spaced:
            refusals.give_back(counted)
            counted = {}
        if not take and not counted:
            return []
        items = [
            {"id": e.subject_id, "title": e.title, "agent": e.agent, "action": e.action}
            | {"space": e.space, "event": e.event}  # for choosing recipients, not sent
            for e in take
        ]
        items += [
            {"id": "", "title": f"{n} call(s) refused by a rate limit", "agent": name, "action": "rate_limited"}
            for name, n in sorted(counted.items())
        ]
        # Spaces: the webhook is the operator's; each e-mail
        # address of an account is told only of its person's spaces.
        messages: list[tuple[str, list[str] | None, list[dict[str, str]]]] = []
        for ch in targets:
            if ch == Channel.EMAIL:
                messages += [(ch, to, mine) for to, mine in recipients.email_groups(items)]
            else:
                operator = recipients.for_operator(items)
                if operator:
                    messages.append((ch, None, operator))
        made = []
        for ch, to, mine in messages:
            kinds = {i.get("event", "") for i in mine}
            event = kinds.pop() if len(kinds) == 1 and "" not in kinds else Event.DIGEST
            payload: dict[str, object] = {
                "event": event,
                "created_at": now.isoformat().replace("+00:00", "Z"),
                "summary": summary_of(mine),
                "items": recipients.public(mine),
            }
            if to is not None:
                payload["to"] = to
            made.append(Delivery.objects.create(channel=ch, event=event, payload=payload, next_attempt_at=now))
        OutboxEvent.objects.filter(pk__in=[e.pk for e in take]).update(batched_at=now)
    for delivery in made:
        n = len(delivery.payload["items"])
        log.info("notify: made %s for %s (%s, %d item(s))", delivery.public_id, delivery.channel, delivery.event, n)
    return made


# --------------------------------------------------------------------------- sending


def _dead(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine's sender: its lease decides
    pid = int(pid_text)
    if pid == os.getpid():
        return owner != OWNER  # this pid, an earlier life (e.g. pid 1 in a restarted container)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def release_dead_claims() -> int:
    """Free messages claimed by a sender on this machine that no longer runs."""
    with transaction.atomic():
        claimed = Delivery.objects.filter(state=DeliveryState.PENDING).exclude(claimed_by="")
        dead = [d.pk for d in claimed.only("pk", "claimed_by") if _dead(d.claimed_by)]
        return Delivery.objects.filter(pk__in=dead).update(claimed_by="", claimed_until=None)


def _claim(now: datetime, limit: int = 50, owner: str = OWNER) -> list[Delivery]:
    with transaction.atomic():
        free = Q(claimed_by="") | Q(claimed_until__lt=now) | Q(claimed_by=owner)
        # SKIP LOCKED (PostgreSQL): rows another daemon's sender is claiming
        # right now are its own, not waited for; SQLite's BEGIN IMMEDIATE
        # already lets one claim run at a time.
        rows = list(
            Delivery.objects.select_for_update(skip_locked=True)
            .filter(free, state=DeliveryState.PENDING, next_attempt_at__lte=now)
            .order_by("id")[:limit]
        )
        Delivery.objects.filter(pk__in=[d.pk for d in rows]).update(claimed_by=owner, claimed_until=now + LEASE)
        return rows


def send_due(now: datetime | None = None, result: PassResult | None = None, *, owner: str = OWNER) -> PassResult:
    """Send every claimed message once; record the outcome of each.
    ``owner`` names the sender in its claims (one per process)."""
    result = result or PassResult()
    for delivery in _claim(now or timezone.now(), owner=owner):
        try:
            channels.send(delivery.channel, delivery.public_id, delivery.payload)
        except channels.SendFailed as exc:
            _failed(delivery, str(exc), result)
        except Exception as exc:  # a bug in a channel must not stop the others
            log.exception("notify: %s raised", delivery.public_id)
            _failed(delivery, f"{type(exc).__name__}", result)
        else:
            Delivery.objects.filter(pk=delivery.pk).update(
                state=DeliveryState.SENT,
                sent_at=timezone.now(),
                attempts=delivery.attempts + 1,
                last_error="",
                claimed_by="",
                claimed_until=None,
            )
            result.sent.append(delivery.public_id)
            log.info("notify: sent %s by %s", delivery.public_id, delivery.channel)
    return result


def _failed(delivery: Delivery, error: str, result: PassResult) -> None:
    now = timezone.now()
    attempts = delivery.attempts + 1
    give_up = now - delivery.created_at >= RETRY_FOR
    Delivery.objects.filter(pk=delivery.pk).update(
        state=DeliveryState.FAILED if give_up else DeliveryState.PENDING,
        attempts=attempts,
        last_error=error[:500],
        next_attempt_at=now + backoff(attempts),
        claimed_by="",
        claimed_until=None,
    )
    (result.failed if give_up else result.retrying).append(delivery.public_id)
    log.warning(
        "notify: %s by %s failed (attempt %d%s): %s",
        delivery.public_id,
        delivery.channel,
        attempts,
        ", giving up" if give_up else f", next in {backoff(attempts).seconds} s",
        error,
    )


# --------------------------------------------------------------------------- the loop

_scanned_on: date | None = None


KEEP_FOR = timedelta(days=30)


def prune(now: datetime | None = None) -> int:
    """Forget told events and finished messages older than KEEP_FOR (the
    outbox is a queue, not a history: the write log is the history)."""
    cutoff = (now or timezone.now()) - KEEP_FOR
    events, _ = OutboxEvent.objects.filter(batched_at__lt=cutoff).delete()
    messages, _ = Delivery.objects.filter(created_at__lt=cutoff).exclude(state=DeliveryState.PENDING).delete()
    return events + messages


def scan_if_new_day() -> None:
    """The daily scan, and the daily prune, once per day of this process."""
    global _scanned_on
    today = timezone.localdate()
    if _scanned_on != today:
        from reviews import actions

        with transaction.atomic():
            if not database_engine().take_turn(connection, "notify-scan"):
                return  # another daemon is scanning now; this one looks again next pass (each fact is told once)
            actions.scan_for_notices(today)
            prune()
        _scanned_on = today


def run_once(now: datetime | None = None) -> PassResult:
    """One pass: the daily scan, then batch, then send."""
    scan_if_new_day()
    result = PassResult()
    result.made = [d.public_id for d in batch(now)]
    return send_due(now, result)


def run_forever(stop: threading.Event, interval: float = 0.5) -> None:
    """The daemon's sender thread: a pass every ``interval`` seconds until ``stop``."""
    try:
        freed = release_dead_claims()
        if freed:
            log.info("notify: %d message(s) left by a stopped sender will be sent again", freed)
        while not stop.is_set():
            close_old_connections()
            try:
                run_once()
            except Exception:
                log.exception("notify: a sender pass failed; trying again")
                stop.wait(5)
            wake.wait(interval)  # a commit in this process wakes it at once
    finally:
        connection.close()


def start_thread() -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=run_forever, args=(stop,), name="vetted-notify", daemon=True)
    thread.start()
    return thread, stop
