"""What a staff member who is not a superuser sees in the admin:
rows of the spaces they may read, through the one rule (reviews.space_access).

A superuser (the operator) sees every row. Anyone else: records of their
spaces; proposals of their spaces; agents they are shown on the site
(space_access.sees_agent); write-log events about a record, proposal or
space of theirs, or about one of their agents (every other event, e.g. an
account's or another person's agent's, does not exist for them); accounts:
their own and their spaces' members. The admin's filters and counts are
built from these querysets (Django's list filters obey get_queryset), so
they count nothing else either.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from . import legacy_events, space_access
from .models import Agent, Proposal, Record
from .space_models import Membership


def _operator(request: Any) -> bool:
    return bool(getattr(request.user, "is_superuser", False))


def records(request: Any, queryset: QuerySet[Any]) -> QuerySet[Any]:
    if _operator(request):
        return queryset
    return queryset.filter(space__in=space_access.readable_spaces(request.user))


def proposals(request: Any, queryset: QuerySet[Any]) -> QuerySet[Any]:
    if _operator(request):
        return queryset
    return queryset.filter(space_access.proposals_in(space_access.readable_spaces(request.user)))


def agent_pks(user: Any) -> QuerySet[Any]:
    return space_access.agents_seen_by(user).values("pk")


def agents(request: Any, queryset: QuerySet[Any]) -> QuerySet[Any]:
    if _operator(request):
        return queryset
    return queryset.filter(pk__in=agent_pks(request.user))


def events(request: Any, queryset: QuerySet[Any]) -> QuerySet[Any]:
    if _operator(request):
        return queryset
    slugs = space_access.readable_spaces(request.user)
    record_ids = Record.objects.filter(space__in=slugs).values("public_id")
    proposal_ids = Proposal.objects.filter(space_access.proposals_in(slugs)).values("public_id")
    agent_ids = list(Agent.objects.filter(pk__in=agent_pks(request.user)).values_list("public_id", flat=True))
    about_mine = (
        Q(record_ref__in=record_ids)
        | Q(proposal_ref__in=proposal_ids)
        | Q(subject_type="space", subject_id__in=slugs)
        | Q(subject_type="agent", subject_id__in=agent_ids)
    )
    # An event that names a record or proposal must name one of theirs: a
    # record moved out of their space keeps its old events, not the new ones.
    foreign = (~Q(record_ref="") & ~Q(record_ref__in=record_ids)) | (
        ~Q(proposal_ref="") & ~Q(proposal_ref__in=proposal_ids)
    )
    # A move's event names both spaces (and the predecessor): only for who
    # reads both. Kept only when both are found among theirs (under today's
    # key or, in an event written before the rename, the old one), so a move
    # whose keys cannot be read is left out, not shown.
    read_both = legacy_events.named_in("from_space", slugs) & legacy_events.named_in("to_space", slugs)
    return queryset.filter(about_mine).exclude(foreign).filter(~Q(event_type="record.moved") | read_both)


def users(request: Any, queryset: QuerySet[Any]) -> QuerySet[Any]:
    if _operator(request):
        return queryset
    spaces = Membership.objects.filter(user_id=request.user.pk).values("space_id")
    members = Membership.objects.filter(space_id__in=spaces).values("user_id")
    return queryset.filter(Q(pk=request.user.pk) | Q(pk__in=members))


__all__ = ["agents", "events", "proposals", "records", "users"]
