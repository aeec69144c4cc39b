"""OAuth 2.1 rows: the clients that asked, the grants a reviewer gave, and
the codes and tokens issued for them (kept only as SHA-256 digests).

An OAuth grant always names an Agent: an OAuth client acts as that agent for
every other purpose (provenance, limits, the agents page, the write log).
Imported by reviews.models so that Django registers them in the reviews app.
State only changes through reviews.actions.oauth.
"""

from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone

# What a client that nobody has vetted yet may make us store (a dynamic
# registration or a metadata document): enough for every real client, and a
# row of a few kilobytes at most.
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_CHARS = 500
MAX_CLIENT_NAME_CHARS = 200
MAX_METADATA_VALUE_CHARS = 500
MAX_CLIENT_ID_CHARS = 500


def new_grant_id() -> str:
    return f"grant_{secrets.token_hex(6)}"


class ClientRegistration(models.TextChoices):
    METADATA_DOCUMENT = "metadata_document", "Client ID Metadata Document"
    DYNAMIC = "dynamic", "Dynamic registration (RFC 7591)"


class OAuthClient(models.Model):
    """A client that asked to sign in: its client_id is either the https URL
    of its metadata document (the document is cached here) or an id minted at
    dynamic registration. Public clients only (PKCE, no client secret)."""

    client_id = models.CharField(max_length=2000, unique=True)
    registration = models.CharField(max_length=20, choices=ClientRegistration.choices)
    client_name = models.CharField(max_length=200, blank=True)
    redirect_uris = models.JSONField(default=list)
    metadata = models.JSONField(default=dict, blank=True)
    fetched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return self.client_name or self.client_id


class OAuthGrant(models.Model):
    """A reviewer's consent: this client may act as this agent, in these
    scopes (a subset of the agent's), at this resource. Every code and token
    issued under it belongs to it; revoking it revokes them all."""

    public_id = models.CharField(max_length=20, unique=True, default=new_grant_id, editable=False)
    client = models.ForeignKey(OAuthClient, on_delete=models.PROTECT, related_name="grants")
    agent = models.ForeignKey("reviews.Agent", on_delete=models.PROTECT, related_name="oauth_grants")
    scopes = models.JSONField(default=list)
    resource = models.CharField(max_length=2000)
    granted_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.client} as {self.agent_id}"


class OAuthCode(models.Model):
    """An authorization code (single use, short-lived), bound to the PKCE
    challenge and redirect URI of its request."""

    digest = models.CharField(max_length=64, unique=True)
    grant = models.ForeignKey(OAuthGrant, on_delete=models.PROTECT, related_name="codes")
    code_challenge = models.CharField(max_length=128)
    redirect_uri = models.CharField(max_length=2000)
    redirect_uri_explicit = models.BooleanField(default=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"code of {self.grant_id}"


class TokenKind(models.TextChoices):
    ACCESS = "access", "Access token"
    REFRESH = "refresh", "Refresh token"


class OAuthToken(models.Model):
    """An access or refresh token of a grant. A refresh token is used once:
    refreshing replaces it (``replaced_at``), and presenting a replaced one
    again revokes the whole grant (refresh-token reuse detection)."""

    digest = models.CharField(max_length=64, unique=True)
    grant = models.ForeignKey(OAuthGrant, on_delete=models.PROTECT, related_name="tokens")
    kind = models.CharField(max_length=8, choices=TokenKind.choices)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    replaced_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.kind} token of {self.grant_id}"
