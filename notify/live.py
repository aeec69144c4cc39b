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

from reviews import space_access
from reviews.models import Proposal, ProposalState, Record, RecordStatus

CACHE_SECONDS = 2
POLL_SECONDS = 3  # with the cache, a new proposal shows within 5 s
_KEY = "vetted:notify:live-counts"


def _pending(deciding: list[str] | None):
    pending = Proposal.objects.filter(state=ProposalState.PENDING)
    return pending if deciding is None else pending.filter(space_access.proposals_in(deciding))


def counts(user: Any = None) -> dict[str, Any]:
    """pending_count, overdue_count, disputed_count and newest_pending (a pk,
    0 if none), of ``user``'s spaces (cached per person, so no one
    sees another's counts; ``user`` None: every space, for commands)."""
    key = f"{_KEY}:{getattr(user, 'pk', 'all')}"
    found = cache.get(key)
    if found is None:
        readable, deciding = space_access.spaces_and_deciding(user) if user is not None else (None, None)
        pending = _pending(deciding)
        records = Record.objects.all() if readable is None else Record.objects.filter(space__in=readable)
        found = {
            "pending_count": pending.count(),
            "newest_pending": pending.aggregate(newest=Max("pk"))["newest"] or 0,
            "overdue_count": records.overdue().count(),
            "disputed_count": records.filter(status=RecordStatus.DISPUTED).count(),
            "deciding": deciding,
        }
        cache.set(key, found, CACHE_SECONDS)
    return dict(found)


def newer_than(after: int, known: dict[str, Any]) -> int:
    """Pending proposals newer than the tab's page (pk > ``after``), of the spaces ``known`` was counted for."""
    if known["newest_pending"] <= after:
        return 0
    return _pending(known.get("deciding")).filter(pk__gt=after).count()


def newest_pending(user: Any = None) -> int:
    """The pk the page was rendered with (uncached: the page's own view of it), of ``user``'s spaces."""
    deciding = space_access.deciding_spaces(user) if user is not None else None
    return _pending(deciding).aggregate(newest=Max("pk"))["newest"] or 0
