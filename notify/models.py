"""The outbox: events worth telling the reviewer, and the messages made of them.

Rows of ``OutboxEvent`` are written by ``reviews.actions`` in the same
transaction as the change that causes them (so a change is never told
without having happened, nor happens without being told). The sender
(``notify.sender``) groups them into ``Delivery`` rows, one per channel,
and sends those at least once. ``FeedKey`` is a reviewer's secret feed URL.

Domain level: imports only the standard library and Django, so the actions
may import it; the senders and channels are never imported by the domain.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


class Event(models.TextChoices):
    """What happened; also the ``event`` of a webhook body."""

    PROPOSAL_CREATED = "proposal.created", "Proposal created"
    DISPUTE_CREATED = "dispute.created", "Dispute raised"
    RECORD_DUE = "record.due", "Record due for review"
    RECORD_CHANGED_OUTSIDE = "record.changed_outside", "Record changed outside Vetted"
    DIGEST = "digest", "Digest"


# Events that go out at once, whatever the batching window: a disputed
# record is withheld from every agent until someone looks.
URGENT_EVENTS = (Event.DISPUTE_CREATED,)

TITLE_MAX = 200


class OutboxEvent(models.Model):
    """One thing worth telling. ``title`` is agent-written (approved text for
    records): every channel escapes and cuts it; it is never a body."""

    event = models.CharField(max_length=32, choices=Event.choices)
    subject_id = models.CharField(max_length=20, help_text="prop_… or rec_…")
    title = models.CharField(max_length=TITLE_MAX, blank=True)
    agent = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=32, blank=True)
    space = models.CharField(max_length=64, blank=True)  # a space slug, as Record.space
    # Scans write the same fact once: e.g. "due:rec_…:2026-12-01".
    key = models.CharField(max_length=120, unique=True, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Set when the sender put it into a message (or decided no channel wants it).
    batched_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.event} {self.subject_id}"


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class Channel(models.TextChoices):
    WEBHOOK = "webhook", "Webhook"
    EMAIL = "email", "Email"


def new_delivery_id() -> str:
    return f"dlv_{secrets.token_hex(8)}"


class Delivery(models.Model):
    """One message to one channel. ``payload`` is frozen when it is made, so
    every retry sends the same message under the same ``public_id`` (a
    receiver drops duplicates by it)."""

    public_id = models.CharField(max_length=24, unique=True, default=new_delivery_id, editable=False)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    event = models.CharField(max_length=32, choices=Event.choices)
    payload = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now, db_index=True)
    last_error = models.CharField(max_length=500, blank=True)
    # The sender holding it right now ("host:pid:boot"), and until when.
    claimed_by = models.CharField(max_length=120, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.public_id} {self.channel} {self.state}"


def new_feed_secret() -> str:
    return secrets.token_urlsafe(24)


class FeedKey(models.Model):
    """A reviewer's secret for the Atom feed (in its URL, so scrubbed from logs)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    secret = models.CharField(max_length=64, unique=True, default=new_feed_secret)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"feed key of user {self.user_id}"
