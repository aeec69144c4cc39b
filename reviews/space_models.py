"""Spaces and their members.

A space is where a record lives: a person's personal memory, a team's
shared memory, or the system space. Its ``slug`` is the value stored in
``Record.space`` / ``Proposal.space`` and in ``Agent.spaces`` (an agent's
grants), so a space is a plain string everywhere a space was one:

- the retrieval index partitions by that value, unchanged;
- the checksum's ``space`` field (reviews/checksum.py, canonical form v1)
  is the slug, so its meaning is "the space the text was approved into".

Why a string and not a ForeignKey: the value is covered by the approval
checksum and copied into the index and the write log; a key that could be
renamed or reassigned would change what those say after the fact. A slug
never changes once a space exists (nothing renames it), so a string column
with the rule "it names an existing space" (reviews.validation) is both
stable and checked. The three spaces made by migration 0008 from the fixed
spaces of before keep those spaces as their slugs (``personal`` is the first
reviewer's personal space), which is why every checksum, id and audit row
stays valid without a mapping rule or a new canonical form.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.db import models
from django.utils import timezone


class SpaceKind(models.TextChoices):
    PERSONAL = "personal", "Personal"
    TEAM = "team", "Team"
    SYSTEM = "system", "System"


class Role(models.TextChoices):
    OWNER = "owner", "Owner"  # decides and manages members
    REVIEWER = "reviewer", "Reviewer"  # decides
    READER = "reader", "Reader"  # sees records and the write log, decides nothing


# Roles that may decide proposals and act on records of a space.
DECIDING_ROLES = (Role.OWNER, Role.REVIEWER)
ROLES = [choice.value for choice in Role]

SLUG_MAX = 64
# A team space: lower-case letters, digits and inner hyphens (acme, north-rail).
TEAM_SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")
# A personal space: personal:<username> (username as Django allows it, lower-cased).
PERSONAL_SLUG = re.compile(r"personal:[a-z0-9_.@+-]{1,54}")
# Slugs no team space may take: the fixed names of before and the kind prefixes.
RESERVED_SLUGS = frozenset({"personal", "team", "system"})
MAX_APPROVALS = 2  # the two-person rule; more would need a reviewer pool no small team has


def personal_slug(username: str) -> str:
    return f"personal:{username.lower()}"


class Space(models.Model):
    """A memory with members. ``required_approvals`` is how many different
    reviewers must accept a proposal before it becomes true (personal: 1)."""

    slug = models.CharField(max_length=SLUG_MAX, unique=True)
    kind = models.CharField(max_length=16, choices=SpaceKind.choices)
    name = models.CharField(max_length=100)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="space_memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["space__slug", "user__username"]
        constraints = [models.UniqueConstraint(fields=["space", "user"], name="membership_once_per_space")]

    def __str__(self) -> str:
        return f"{self.user_id} {self.role} of {self.space_id}"


class ProposalApproval(models.Model):
    """One reviewer's accept of a proposal in a space that needs two
    (``required_approvals`` 2): the proposal becomes true at the second
    accept by a different reviewer. ``content_checksum`` is what was
    accepted (the proposal's, or for a retire/dispute its target's approved
    checksum): an approval of content that has changed since counts for
    nothing, so a revision resets the count."""

    proposal = models.ForeignKey("reviews.Proposal", on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    content_checksum = models.CharField(max_length=64)
    note = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.proposal_id} approved by {self.user_id}"
