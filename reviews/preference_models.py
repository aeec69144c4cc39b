"""The reviewers' inbox preference (re-exported by reviews.models, where
Django registers it; split out to keep models.py small)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class InboxView(models.TextChoices):
    CARDS = "cards", "Cards"
    COMPACT = "compact", "Compact list"


class ReviewerPreference(models.Model):
    """How one reviewer likes the inbox (``?view=compact|cards`` sets it)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_preference")
    inbox_view = models.CharField(max_length=16, choices=InboxView.choices, default=InboxView.CARDS)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.inbox_view}"
