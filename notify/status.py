"""What the settings page shows of notifications (read-only)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Count
from django.urls import reverse

from .channels import configured
from .models import Delivery, FeedKey, OutboxEvent

RECENT = 20


def settings_context(user: Any) -> dict[str, Any]:
    key = FeedKey.objects.filter(user_id=user.pk).first() if getattr(user, "pk", None) else None
    # Spaces: the outbox, the messages and the addresses span every
    # space and person, so only the operator (a superuser) sees them.
    operator = bool(getattr(user, "is_superuser", False))
    states = (
        dict(Delivery.objects.values_list("state").annotate(n=Count("pk")).values_list("state", "n"))
        if operator
        else {}
    )
    return {
        "notify_operator": operator,
        "notify_channels": configured(),
        "notify_webhook_format": settings.VETTED_WEBHOOK_FORMAT,
        "notify_email_to": settings.VETTED_NOTIFY_EMAIL if operator else [],
        "notify_spaces": settings.VETTED_NOTIFY_SPACES,
        "notify_min_seconds": settings.VETTED_NOTIFY_MIN_SECONDS,
        "notify_states": states,
        "notify_waiting": OutboxEvent.objects.filter(batched_at=None).count() if operator else 0,
        "notify_recent": list(Delivery.objects.order_by("-id")[:RECENT]) if operator else [],
        "feed_url": f"{settings.VETTED_PUBLIC_URL}{reverse('notify_feed')}?key={key.secret}" if key else "",
    }
