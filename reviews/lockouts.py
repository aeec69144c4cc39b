"""Sign-in lockouts (django-axes, configured in memory_site/settings.py): the
log line and the list the reviewer clears them from (the page a locked-out
person sees is reviews.inbox.views.lockout_response). Clearing one is a state
change: actions.clear_login_lockout.

A username is locked after AXES_FAILURE_LIMIT failed sign-ins within the
lockout period, from any address; an address is locked after as many
failures, on any usernames. The site's sign-in and the admin's both count.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.db.models import Max, Sum
from django.dispatch import receiver
from django.utils import timezone

log = logging.getLogger(__name__)


def minutes() -> int:
    return settings.VETTED_LOGIN_LOCKOUT_MINUTES


def how_to_clear(username: str = "", address: str = "") -> str:
    target = f"--username {username}" if username else f"--address {address}" if address else "--list"
    return f"python manage.py clear_lockout {target}"


@dataclass(frozen=True)
class Lockout:
    kind: str  # "username" or "address"
    value: str
    failures: int
    last_attempt: datetime

    @property
    def until(self) -> datetime:
        return self.last_attempt + settings.AXES_COOLOFF_TIME


def concerning(user: object) -> list[Lockout]:
    """The lockouts ``user`` is shown (issue 16): a superuser (the operator)
    every one; anyone else only their own username's. An address is shared
    by whoever signs in from it and its failures name other accounts, so it
    is the operator's."""
    found = current()
    if getattr(user, "is_superuser", False):
        return found
    mine = getattr(user, "get_username", lambda: None)()
    return [lockout for lockout in found if lockout.kind == "username" and lockout.value == mine]


def may_clear(user: object, *, username: str = "") -> bool:
    """Whether ``user`` may clear this lockout: a superuser any, anyone else their own username's only."""
    return bool(getattr(user, "is_superuser", False)) or (
        bool(username) and username == getattr(user, "get_username", lambda: None)()
    )


def current() -> list[Lockout]:
    """Every username and address locked right now, the most recent first."""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    recent = AccessAttempt.objects.filter(attempt_time__gte=since)
    found = []
    for kind, column in (("username", "username"), ("address", "ip_address")):
        rows = (
            recent.exclude(**{f"{column}__isnull": True})
            .values(column)
            .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
            .filter(failures__gte=settings.AXES_FAILURE_LIMIT)
        )
        found += [Lockout(kind, row[column], row["failures"], row["last"]) for row in rows]
    return sorted(found, key=lambda lockout: lockout.last_attempt, reverse=True)


@receiver(user_locked_out, dispatch_uid="vetted.lockout_logged")
def _log_lockout(sender, request=None, username=None, ip_address=None, **kwargs):
    log.warning(
        "Sign-in locked for %s min after %s failed attempts: username %r, address %s. "
        "The reviewer can clear it on Settings or with `%s`.",
        minutes(),
        settings.AXES_FAILURE_LIMIT,
        username or "",
        ip_address or "unknown",
        how_to_clear(username=username or "", address=ip_address or ""),
    )
