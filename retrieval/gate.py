"""The query-time gate: deliver only what is currently true.

Everything that leaves retrieval passes through here, with rows re-read from
the record table at query time (never trusted from an index). What
"deliverable" means is the domain's (Record.withhold_reason and
RecordQuerySet.current, reviews/models.py); this module applies it for a
reader. Records outside the reader's spaces do not exist for it: they are
never counted or named. A record counts as in a space by the space it was
*approved* in (retrieval/approved_content.py), so editing a record's space out of band
neither hides it from its readers nor shows it to others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from reviews.errors import NotFound
from reviews.models import WITHHOLD_REASONS, Agent, Record, RecordStatus
from reviews.space_access import space_slugs

from . import approved_content

REASONS = WITHHOLD_REASONS


@dataclass(frozen=True)
class Reader:
    """Who is asking: the spaces they may read (and the agent, if one)."""

    spaces: frozenset[str]
    agent: Agent | None = None

    @classmethod
    def everything(cls) -> Reader:
        return cls(frozenset(space_slugs()))

    @classmethod
    def for_agent(cls, agent: Agent) -> Reader:
        return cls(frozenset(agent.spaces), agent)

    @classmethod
    def for_spaces(cls, spaces: Iterable[str]) -> Reader:
        return cls(frozenset(spaces))

    def can_read(self, record: Record) -> bool:
        return record.space in self.spaces

    def may_know_of(self, record: Record) -> bool:
        """Whether this record exists for the reader at all: it was approved
        in one of the reader's spaces."""
        return approved_content.approved_space(record) in self.spaces


def withhold_reason(record: Record, today: date | None = None) -> str | None:
    """Why ``record`` must not be delivered right now, or None if it may."""
    return record.withhold_reason(today)


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

    Unknown ids and records outside the reader's spaces raise NotFound with
    the same message, so spaces cannot be probed. A withheld record gives its
    reason (and the current successor of a superseded one), never its text.
    """
    public_id = str(public_id or "").strip()
    # No id holds a NUL (and PostgreSQL refuses one in any text parameter).
    findable = len(public_id) <= 20 and "\x00" not in public_id
    record = Record.objects.filter(public_id=public_id).first() if findable else None
    if record is None or not reader.may_know_of(record):
        raise NotFound(f"No record with id {public_id[:40]!r}.")
    reason = withhold_reason(record)
    if reason is None:
        return ReadResult(record=record, public_id=record.public_id)
    successor = current_successor(record, reader) if reason == "superseded" else None
    return ReadResult(record=None, withheld=reason, successor=successor, public_id=record.public_id)
