"""The outbox writer every action uses: one ``notify.models.OutboxEvent`` per
fact worth telling the reviewer, in the caller's transaction (so nothing is
told that did not happen, and nothing happens untold). Private to
``reviews.actions``; the senders (``notify.sender``) read the rows."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from notify import wake
from notify.models import TITLE_MAX, Event, OutboxEvent

from ..models import Agent, Proposal, ProposalAction, Record

# One agent disputing this many records within the window is told as a fact
# of its own (each dispute withholds a record from every agent). The inbox
# shows a warning by the same rule (inbox/page_helpers.py reads these).
DISPUTE_BURST = 3
DISPUTE_WINDOW_MINUTES = 10


def _record_title(record: Record) -> str:
    """The approved title only: text changed outside Vetted was never reviewed."""
    approved = record.approved_version()
    return str(approved["title"]) if approved else ""


def _tell(
    event: str,
    *,
    subject_id: str,
    title: str = "",
    agent: str = "",
    action: str = "",
    space: str = "",
    key: str | None = None,
) -> bool:
    """Write one outbox row; with ``key``, only if that fact was not told yet.
    True when a row was written."""
    fields = {
        "event": event,
        "subject_id": subject_id,
        "title": (title or "")[:TITLE_MAX],
        "agent": agent[:64],
        "action": action[:32],
        "space": space,
    }
    if key is None:
        OutboxEvent.objects.create(**fields)
        created = True
    else:
        _row, created = OutboxEvent.objects.get_or_create(key=key, defaults=fields)
    if created:
        transaction.on_commit(wake.poke)
    return created


def tell_proposal(proposal: Proposal) -> None:
    """A new proposal (create, revise, retire), or a dispute and, when it
    makes a burst, the burst."""
    agent = proposal.agent.name if isinstance(proposal.agent, Agent) else proposal.proposer_label
    target = proposal.target
    if proposal.action in (ProposalAction.CREATE, ProposalAction.REVISE):
        title, space = proposal.title, proposal.space
    else:
        title, space = (_record_title(target), target.space) if target is not None else ("", "")
    if proposal.action != ProposalAction.DISPUTE:
        _tell(
            Event.PROPOSAL_CREATED,
            subject_id=proposal.public_id,
            title=title,
            agent=agent,
            action=proposal.action,
            space=space,
        )
        return
    _tell(Event.DISPUTE_CREATED, subject_id=proposal.public_id, title=title, agent=agent, action="dispute", space=space)
    if proposal.agent_id is None:
        return
    since = timezone.now() - timedelta(minutes=DISPUTE_WINDOW_MINUTES)
    recent = Proposal.objects.filter(agent_id=proposal.agent_id, action=ProposalAction.DISPUTE, created_at__gte=since)
    if recent.count() == DISPUTE_BURST:
        first = recent.order_by("created_at", "id").values_list("public_id", flat=True).first()
        _tell(
            Event.DISPUTE_CREATED,
            subject_id=proposal.public_id,
            title=f"Agent {agent} disputed {DISPUTE_BURST} records in {DISPUTE_WINDOW_MINUTES} minutes",
            agent=agent,
            action="dispute_burst",
            space=space,
            key=f"burst:{first}",
        )


def tell_changed_outside(record: Record) -> bool:
    """A record whose text no longer matches its approval (once per edited text)."""
    return _tell(
        Event.RECORD_CHANGED_OUTSIDE,
        subject_id=record.public_id,
        title=_record_title(record),
        action="changed_outside",
        space=str((record.approved_text() or {}).get("space", record.space)),
        key=f"changed:{record.public_id}:{record.current_checksum()}",
    )


def tell_due(record: Record) -> bool:
    """A record past its review date (once per review date)."""
    return _tell(
        Event.RECORD_DUE,
        subject_id=record.public_id,
        title=_record_title(record),
        action="due",
        space=record.space,
        key=f"due:{record.public_id}:{record.review_by}",
    )
