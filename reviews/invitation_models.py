"""An invitation for a new person to join a space: a one-time link an owner
makes. Only the SHA-256 digest of its token is kept (like an agent's token):
whoever reads the database cannot use an open invitation. It is used at
most once (``used_at``), only before ``expires_at``, and never after an
owner revoked it (``revoked_at``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .space_models import Role, Space


class Invitation(models.Model):
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=16, choices=Role.choices)
    token_digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invitation {self.pk} to {self.space_id} as {self.role}"

    @property
    def open(self) -> bool:
        return self.used_at is None and self.revoked_at is None and self.expires_at > timezone.now()
