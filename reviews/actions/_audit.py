"""The audit writer every action uses: one AuditEvent per change, in the
caller's transaction, and one log line (ids and names, never text) once the
transaction commits. Also the actor types. Private to ``reviews.actions``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from ..models import ActorType, Agent, AuditEvent, Proposal, Record, SubjectType

# Every action writes its AuditEvent through audit, which also logs it: one
# logger for the whole actions package.
log = logging.getLogger("reviews.actions")


@dataclass(frozen=True)
class SystemActor:
    """A component acting on its own (e.g. an importer); never a reviewer."""

    name: str


Actor = AbstractBaseUser | Agent | SystemActor


def _actor_fields(actor: Actor) -> tuple[str, str]:
    if isinstance(actor, Agent):
        return ActorType.AGENT, actor.name
    if isinstance(actor, SystemActor):
        return ActorType.SYSTEM, actor.name
    return ActorType.USER, actor.get_username()


# What an event is about: a row, or (SubjectType, id) for one with no row.
Subject = Record | Proposal | Agent | AbstractBaseUser | tuple[str, str]


def _subject_fields(subject: Subject) -> tuple[str, str]:
    if isinstance(subject, tuple):  # (SubjectType, id) for a subject with no row, e.g. a sign-in lockout
        return subject
    if isinstance(subject, Record):
        return SubjectType.RECORD, subject.public_id
    if isinstance(subject, Proposal):
        return SubjectType.PROPOSAL, subject.public_id
    if isinstance(subject, Agent):
        return SubjectType.AGENT, subject.public_id
    return SubjectType.USER, subject.get_username()


# Keys of an event's ``extra`` that hold only ids, enums or flags (the rest,
# e.g. the changed fields of a revision, may hold text).
_LOGGED_EXTRA = (
    "action",
    "supersedes",
    "to_space",
    "closed_proposals",
    "rejected_disputes",
    "dispute_cleared",
    "is_staff",
    "is_active",
    # undo (reviews.actions.undo): the event undone, and what it reopened or retired
    "undoes",
    "reopened_proposals",
    "retired",
)


def _log_value(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def audit(
    event_type: str,
    *,
    actor: Actor,
    subject: Subject,
    record: Record | None = None,
    proposal: Proposal | None = None,
    before: str = "",
    after: str = "",
    snippet: str = "",
    extra: dict[str, Any] | None = None,
) -> AuditEvent:
    actor_type, actor_name = _actor_fields(actor)
    subject_type, subject_id = _subject_fields(subject)
    record_ref = record.public_id if record else ""
    proposal_ref = proposal.public_id if proposal else ""
    # Logged once the change is committed (a rolled-back import logs nothing).
    # Ids and names only: the snippet and extra may hold titles, notes, reasons.
    fields = [
        ("actor", f"{actor_type}:{actor_name}"),
        ("subject", f"{subject_type}:{subject_id}"),
        ("record", record_ref),
        ("proposal", proposal_ref),
        *((key, (extra or {}).get(key)) for key in _LOGGED_EXTRA),
    ]
    line = " ".join(f"{key}={_log_value(value)}" for key, value in fields if value not in (None, "", [], subject_id))
    transaction.on_commit(lambda: log.info("%s %s", event_type, line))
    return AuditEvent.objects.create(
        event_type=event_type,
        actor_type=actor_type,
        actor=actor_name,
        subject_type=subject_type,
        subject_id=subject_id,
        record_ref=record_ref,
        proposal_ref=proposal_ref,
        checksum_before=before,
        checksum_after=after,
        snippet=(snippet or "")[:200],
        extra=extra or {},
    )
