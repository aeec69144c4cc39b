"""The settings page's "send a test notification": one message on a channel
the operator configured for the whole instance (the webhook, the e-mail
list). Those channels are the operator's, so only the operator (an active
superuser) may send on them; a reviewer could otherwise post text of the
site's choosing into the operator's chat or mailbox at will."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from . import channels
from .models import Channel, new_delivery_id

TITLE = "Test notification from Vetted"


class TestRefused(Exception):
    """Not sent; the message says why."""


def may_send(user: Any) -> bool:
    from reviews.policy import is_operator  # the one policy says who the operator is

    return is_operator(user)


def send_test(user: Any, channel: str) -> str:
    """Send one test message on ``channel`` now; what to tell the person.
    Raises TestRefused (not the operator, or not a configured channel) or
    channels.SendFailed."""
    if not may_send(user):
        raise TestRefused("Only the operator (a superuser) may send test notifications to the operator's channels.")
    if channel not in channels.configured():
        raise TestRefused(f"{channel or 'That channel'} is not configured; see docs/notifications.md.")
    payload = {
        "event": "digest",
        "created_at": timezone.now().isoformat().replace("+00:00", "Z"),
        "summary": TITLE,
        "items": [{"id": "", "title": TITLE, "agent": "", "action": "test"}],
    }
    channels.send(channel, new_delivery_id(), payload)
    return f"Sent a test {Channel(channel).label.lower()}."
