"""The query-time gate: deliver only what is currently true.

Everything that leaves retrieval passes through here, with rows re-read from
the record table at query time (never trusted from an index): status
approved, not past review_by, text unchanged since approval (checksum), not
past valid_until nor before valid_from, and in a scope the reader may read. Out-of-scope records do
not exist for the reader: they are never counted or named.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.utils import timezone

from reviews.errors import NotFound
from reviews.models import SCOPES, Agent, Record, RecordStatus

# Reasons, in the order they are checked (a record gets the first that applies).
REASONS = ("retired", "superseded", "disputed", "edited", "expired", "not_yet_valid", "overdue")


@dataclass(frozen=True)
class Reader:
    """Who is asking: the scopes they may read (and the agent, if one)."""

    scopes: frozenset[str]
    agent: Agent | None = None

    @classmethod
    def everything(cls) -> Reader:
        return cls(frozenset(SCOPES))

    @classmethod
    def for_agent(cls, agent: Agent) -> Reader:
        return cls(frozenset(agent.scopes), agent)

    @classmethod
    def for_scopes(cls, scopes) -> Reader:
        return cls(frozenset(scopes))

    def can_read(self, record: Record) -> bool:
        return record.scope in self.scopes


def withhold_reason(record: Record, today: date | None = None) -> str | None:
    """Why ``record`` must not be delivered right now, or None if it may."""
    today = today or timezone.localdate()
    if record.status == RecordStatus.RETIRED:
        return "retired"
    if record.status == RecordStatus.SUPERSEDED:
        return "superseded"
    if record.status == RecordStatus.DISPUTED:
        return "disputed"
    if record.status != RecordStatus.APPROVED:  # an unknown status fails safe
        return "disputed"
    if record.current_checksum() != record.approved_checksum:
        return "edited"
    if record.valid_until is not None and record.valid_until < today:
        return "expired"
    if record.valid_from is not None and record.valid_from > today:
        return "not_yet_valid"  # it describes a state of the world not yet in force
    if record.review_by < today:
        return "overdue"
    return None


def current_successor(record: Record, reader: Reader, today: date | None = None) -> Record | None:
    """The newest version of a superseded record, if the reader may have it."""
    seen = {record.pk}
    current = record
    while current.status == RecordStatus.SUPERSEDED and current.superseded_by_id:
        if current.superseded_by_id in seen or len(seen) > 100:  # a loop: fail safe
            return None
        seen.add(current.superseded_by_id)
        current = Record.objects.get(pk=current.superseded_by_id)
    if current.pk == record.pk or not reader.can_read(current) or withhold_reason(current, today):
        return None
    return current


@dataclass
class ReadResult:
    record: Record | None  # None when withheld
    withheld: str | None = None
    successor: Record | None = None
    public_id: str = ""


def read_record(public_id: str, reader: Reader) -> ReadResult:
    """One record by id, through the same gate as search.

    Unknown ids and records outside the reader's scopes raise NotFound with
    the same message, so scopes cannot be probed. A withheld record gives its
    reason (and the current successor of a superseded one), never its text.
    """
    public_id = str(public_id or "").strip()
    record = Record.objects.filter(public_id=public_id).first() if len(public_id) <= 20 else None
    if record is None or not reader.can_read(record):
        raise NotFound(f"No record with id {public_id[:40]!r}.")
    reason = withhold_reason(record)
    if reason is None:
        return ReadResult(record=record, public_id=record.public_id)
    successor = current_successor(record, reader) if reason == "superseded" else None
    return ReadResult(record=None, withheld=reason, successor=successor, public_id=record.public_id)
