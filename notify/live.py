"""The live inbox's numbers: what an open inbox polls every few seconds.

The header counts and the newest pending proposal are cached for
CACHE_SECONDS in the process (the daemon is one process, so every open tab
shares them): a poll costs at most one indexed COUNT of its own, and none
when nothing newer than the tab's page is pending.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db.models import Max

from reviews.models import Proposal, ProposalState, Record, RecordStatus

CACHE_SECONDS = 2
POLL_SECONDS = 3  # with the cache, a new proposal shows within 5 s
_KEY = "vetted:notify:live-counts"


def counts() -> dict[str, Any]:
    """pending_count, overdue_count, disputed_count and newest_pending (a pk, 0 if none)."""
    found = cache.get(_KEY)
    if found is None:
        pending = Proposal.objects.filter(state=ProposalState.PENDING)
        found = {
            "pending_count": pending.count(),
            "newest_pending": pending.aggregate(newest=Max("pk"))["newest"] or 0,
            "overdue_count": Record.objects.overdue().count(),
            "disputed_count": Record.objects.filter(status=RecordStatus.DISPUTED).count(),
        }
        cache.set(_KEY, found, CACHE_SECONDS)
    return dict(found)


def newer_than(after: int, known: dict[str, Any]) -> int:
    """Pending proposals newer than the tab's page (pk > ``after``)."""
    if known["newest_pending"] <= after:
        return 0
    return Proposal.objects.filter(state=ProposalState.PENDING, pk__gt=after).count()


def newest_pending() -> int:
    """The pk the page was rendered with (uncached: the page's own view of it)."""
    return Proposal.objects.filter(state=ProposalState.PENDING).aggregate(newest=Max("pk"))["newest"] or 0
