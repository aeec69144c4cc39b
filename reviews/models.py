"""Records, proposals, agents and the append-only write log.

State only changes through reviews.actions; nothing here writes on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from . import ids
from .checksum import CHECKSUM_FIELDS, checksum_of, is_approved_copy


# Named defaults (migrations refer to them); the format lives in reviews/ids.py.
def new_record_id() -> str:
    return ids.new_id(ids.RECORD)


def new_proposal_id() -> str:
    return ids.new_id(ids.PROPOSAL)


def new_agent_id() -> str:
    return ids.new_id(ids.AGENT)


class BaseSpace(models.TextChoices):
    PERSONAL = "personal", "Personal"
    TEAM = "team", "Team"
    SYSTEM = "system", "System"


SPACES = [choice.value for choice in BaseSpace]


class Agent(models.Model):
    """A tool that may read and propose. Its token is kept only as a digest."""

    public_id = models.CharField(max_length=20, unique=True, default=new_agent_id, editable=False)
    name = models.CharField(max_length=64, unique=True)
    token_digest = models.CharField(
        max_length=64,
        unique=True,
        null=True,
        blank=True,
        editable=False,
        help_text="SHA-256 of the token. Agents without one (e.g. 'import') cannot authenticate.",
    )
    token_prefix = models.CharField(max_length=16, blank=True, editable=False)
    # The agent's grants: slugs of the spaces it may read and propose into,
    # only among the spaces its owner is a member of (reviews.actions.spaces).
    spaces = models.JSONField(default=list)
    # The person who created or consented to the agent; null only
    # for system agents such as "import" and for agents whose person is gone.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="agents"
    )
    source_tool = models.CharField(max_length=64, blank=True)
    is_active = models.BooleanField(default=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def can_use_space(self, space: str) -> bool:
        return space in self.spaces

    @property
    def grants(self) -> list[str]:
        """Slugs of the spaces this agent is granted (stored in ``spaces``)."""
        return list(self.spaces)


class RecordStatus(models.TextChoices):
    APPROVED = "approved", "Approved"
    DISPUTED = "disputed", "Disputed"
    RETIRED = "retired", "Retired"
    SUPERSEDED = "superseded", "Superseded"


# Statuses in which a record is still the current version of its content
# (a retired or superseded record is history).
LIVE_STATUSES = (RecordStatus.APPROVED, RecordStatus.DISPUTED)

# Why a record may not be delivered, in the order they are checked (a record
# gets the first that applies); see Record.withhold_reason.
WITHHOLD_REASONS = ("retired", "superseded", "disputed", "edited", "expired", "not_yet_valid", "overdue")


class RecordQuerySet(models.QuerySet["Record"]):
    """The one definition of which records are live, overdue and deliverable.

    ``current(today)`` is every condition of "deliverable" that SQL can check;
    the remaining one, "unchanged since approval", needs the checksum and is
    ``Record.withhold_reason``'s. Everything that decides what an agent may
    receive (the retrieval gate, its index, describe, list) is built on these
    two, so the rule lives here once (tests/test_retrieval_gate.py checks that
    they agree).
    """

    def live(self) -> RecordQuerySet:
        """Still the current version of their content: approved or disputed."""
        return self.filter(status__in=LIVE_STATUSES)

    def in_spaces(self, spaces: Iterable[str]) -> RecordQuerySet:
        return self.filter(space__in=list(spaces))

    def overdue(self, today: date | None = None) -> RecordQuerySet:
        """Approved but past their review date: waiting for a reviewer to verify them."""
        today = today or timezone.localdate()
        return self.filter(status=RecordStatus.APPROVED, review_by__lt=today)

    def current(self, today: date | None = None) -> RecordQuerySet:
        """Approved, not past the review date, inside any validity window."""
        today = today or timezone.localdate()
        return self.filter(
            Q(valid_until__isnull=True) | Q(valid_until__gte=today),
            Q(valid_from__isnull=True) | Q(valid_from__lte=today),
            status=RecordStatus.APPROVED,
            review_by__gte=today,
        )

    def deliverable(self, spaces: Iterable[str], today: date | None = None) -> RecordQuerySet:
        """Candidates an agent with ``spaces`` may receive today; each must
        still pass ``withhold_reason() is None`` (the checksum)."""
        return self.current(today).in_spaces(spaces)


class Record(models.Model):
    """A piece of approved memory. Its text never changes after approval:
    a change is a new record that supersedes this one."""

    public_id = models.CharField(max_length=20, unique=True, default=new_record_id, editable=False)
    kind = models.CharField(max_length=32, db_index=True)
    # The slug of the record's space (reviews/space_models.py says why a string).
    space = models.CharField(max_length=64, db_index=True)
    title = models.CharField(max_length=200)
    body = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=RecordStatus.choices, default=RecordStatus.APPROVED, db_index=True)

    review_by = models.DateField(db_index=True)
    approved_checksum = models.CharField(max_length=64, db_index=True)
    # The approved kind, space, title, body and tags (exactly what the
    # checksum covers), so text changed outside Vetted can be shown against
    # what a person approved, and restored. Null only for records already
    # edited when this copy began to be kept (migration 0003): that text is lost.
    approved_content = models.JSONField(null=True, blank=True, editable=False)
    # Look-alike keys (reviews.confusables): the approved content and the
    # title folded to their UTS #39 skeletons, so a copy that differs only
    # in look-alike or invisible characters is found by an index probe.
    skeleton_checksum = models.CharField(max_length=64, blank=True, db_index=True, editable=False)
    title_skeleton = models.CharField(max_length=64, blank=True, db_index=True, editable=False)
    approved_at = models.DateTimeField()
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    verified_at = models.DateTimeField(null=True, blank=True)
    valid_from = models.DateField(null=True, blank=True)
    valid_until = models.DateField(null=True, blank=True)

    supersedes = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    # Provenance: who asked for this and why.
    proposed_by = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="records")
    source_tool = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    session = models.CharField(max_length=128, blank=True)

    confidence = models.FloatField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RecordQuerySet.as_manager()

    class Meta:
        ordering = ["-approved_at"]
        indexes = [models.Index(fields=["space", "status"])]

    def __str__(self) -> str:
        return f"{self.public_id} {self.title}"

    def checksummed_content(self) -> dict[str, Any]:
        """The current values of the fields the checksum covers."""
        return {name: getattr(self, name) for name in CHECKSUM_FIELDS}

    def current_checksum(self) -> str:
        return checksum_of(self.checksummed_content())

    @property
    def edited_since_approval(self) -> bool:
        """The one definition: the current text is not the text a person approved."""
        return self.current_checksum() != self.approved_checksum

    def approved_version(self) -> dict[str, Any] | None:
        """The record as a person approved it, for anything shown as the
        record: its current checksummed fields while they match the checksum,
        else the kept copy (None when none is kept)."""
        if not self.edited_since_approval:
            return self.checksummed_content()
        return self.approved_text()

    def approved_text(self) -> dict[str, Any] | None:
        """The content as approved (CHECKSUM_FIELDS), or None when no intact
        copy is kept. A copy that does not match ``approved_checksum`` counts
        as none: nothing may be restored or built on unless it is provably
        what was approved."""
        copy = self.approved_content
        return dict(copy) if copy is not None and is_approved_copy(copy, self.approved_checksum) else None

    def withhold_reason(self, today: date | None = None, valid_on: date | None = None) -> str | None:
        """Why this record must not be delivered right now (one of
        WITHHOLD_REASONS), or None if it may be. The Python form of
        RecordQuerySet.current() plus the checksum check. ``valid_on`` judges
        the validity window on another day than ``today`` (valid_at)."""
        return withhold_reason_of(
            status=self.status,
            edited=self.current_checksum() != self.approved_checksum,
            valid_from=self.valid_from,
            valid_until=self.valid_until,
            review_by=self.review_by,
            today=today or timezone.localdate(),
            valid_on=valid_on,
        )


def withhold_reason_of(
    *,
    status: str,
    edited: bool,
    valid_from: date | None,
    valid_until: date | None,
    review_by: date,
    today: date,
    valid_on: date | None = None,
) -> str | None:
    """The one deliverable rule, on plain values: Record.withhold_reason
    applies it to a row as it is now, reviews.history to a record as it
    stood at a past moment (its status, review date and whether its text had
    been changed outside Vetted then). ``today`` decides "overdue";
    ``valid_on`` (default ``today``) the validity window."""
    valid_on = valid_on or today
    if status == RecordStatus.RETIRED:
        return "retired"
    if status == RecordStatus.SUPERSEDED:
        return "superseded"
    if status != RecordStatus.APPROVED:  # disputed, or an unknown status: fail safe
        return "disputed"
    if edited:
        return "edited"
    if valid_until is not None and valid_until < valid_on:
        return "expired"
    if valid_from is not None and valid_from > valid_on:
        return "not_yet_valid"  # it describes a state of the world not yet in force
    if review_by < today:
        return "overdue"
    return None


class ProposalAction(models.TextChoices):
    CREATE = "create", "Create"
    REVISE = "revise", "Revise"
    RETIRE = "retire", "Retire"
    DISPUTE = "dispute", "Dispute"


class ProposalState(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    WITHDRAWN = "withdrawn", "Withdrawn"


class Proposal(models.Model):
    """What an agent, an import or a reviewer asks to change."""

    public_id = models.CharField(max_length=20, unique=True, default=new_proposal_id, editable=False)
    action = models.CharField(max_length=16, choices=ProposalAction.choices, db_index=True)
    target = models.ForeignKey(Record, null=True, blank=True, on_delete=models.PROTECT, related_name="proposals")
    state = models.CharField(max_length=16, choices=ProposalState.choices, default=ProposalState.PENDING, db_index=True)

    # The proposed content (create and revise; empty for retire and dispute).
    kind = models.CharField(max_length=32, blank=True)
    space = models.CharField(max_length=64, blank=True)
    title = models.CharField(max_length=200, blank=True)
    body = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    review_by = models.DateField(null=True, blank=True)
    valid_from = models.DateField(null=True, blank=True)
    valid_until = models.DateField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    content_checksum = models.CharField(max_length=64, blank=True, db_index=True)
    skeleton_checksum = models.CharField(max_length=64, blank=True, db_index=True, editable=False)

    reason = models.TextField()
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="proposals")
    proposed_by_user = models.CharField(max_length=150, blank=True)
    source_tool = models.CharField(max_length=64, blank=True)
    session = models.CharField(max_length=128, blank=True)

    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)
    # When the reviewer accepted an edited version: the fields they changed,
    # with the approved values (the proposed ones stay in the columns above).
    reviewer_changes = models.JSONField(default=dict, blank=True)
    result_record = models.ForeignKey(Record, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # Resubmission: the same agent's earlier rejected proposal with
    # this very content, and the agent's reason for sending it again.
    resubmits = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    resubmit_reason = models.TextField(blank=True)

    created_at = models.DateTimeField(default=timezone.now, editable=False, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        label = self.title or (self.target.title if self.target is not None else "")
        return f"{self.public_id} {self.action} {label}".strip()

    @property
    def proposer_label(self) -> str:
        if self.agent is not None:
            return self.agent.name
        return f"user:{self.proposed_by_user}" if self.proposed_by_user else "unknown"


class ActorType(models.TextChoices):
    USER = "user", "User"
    AGENT = "agent", "Agent"
    SYSTEM = "system", "System"


class SubjectType(models.TextChoices):
    RECORD = "record", "Record"
    PROPOSAL = "proposal", "Proposal"
    AGENT = "agent", "Agent"
    USER = "user", "User"
    SPACE = "space", "Space"


class AuditEvent(models.Model):
    """One row per mutation, written in the same transaction as the change.

    Append-only: triggers in migration 0002 abort any UPDATE or DELETE at the
    SQL level. References are public ids (strings, not foreign keys) so that
    nothing elsewhere can ever cascade into this table.
    """

    event_type = models.CharField(max_length=48, db_index=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor_type = models.CharField(max_length=8, choices=ActorType.choices, db_index=True)
    actor = models.CharField(max_length=150, db_index=True, help_text="Username, agent name or system component.")
    subject_type = models.CharField(max_length=16, choices=SubjectType.choices)
    subject_id = models.CharField(max_length=150, db_index=True)
    record_ref = models.CharField(max_length=20, blank=True, db_index=True)
    proposal_ref = models.CharField(max_length=20, blank=True, db_index=True)
    checksum_before = models.CharField(max_length=64, blank=True)
    checksum_after = models.CharField(max_length=64, blank=True)
    snippet = models.CharField(max_length=200, blank=True)
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.event_type} {self.subject_id} by {self.actor}"


# OAuth clients, grants, codes and tokens, spaces, and the reviewers' inbox
# preference live in their own modules (registered here).
from .invitation_models import Invitation as Invitation  # noqa: E402
from .oauth_models import OAuthClient, OAuthCode, OAuthGrant, OAuthToken  # noqa: E402, F401
from .preference_models import InboxView as InboxView  # noqa: E402
from .preference_models import ReviewerPreference as ReviewerPreference  # noqa: E402
from .space_models import Membership, ProposalApproval, Space  # noqa: E402, F401
