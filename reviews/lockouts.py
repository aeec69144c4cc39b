"""Sign-in lockouts (django-axes, configured in memory_site/settings.py): the
log line and the list the reviewer clears them from (the page a locked-out
person sees is inbox.views.lockout_response). Clearing one is a state
change: actions.clear_login_lockout.

A pair (username, address) is locked after AXES_FAILURE_LIMIT failed
sign-ins within the lockout period; neither a username nor an address is
locked on its own, so a stranger cannot lock a person out from elsewhere and
failures on many usernames do not lock an address people share. A username
under attack from many addresses is slowed instead (``slowdown_seconds``).
The site's sign-in and the admin's both count.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
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
    kind: str  # "pair" (a username from an address, locked) or "slowed" (a username, slowed down)
    username: str
    address: str
    failures: int
    last_attempt: datetime

    @property
    def until(self) -> datetime:
        return self.last_attempt + settings.AXES_COOLOFF_TIME

    @property
    def value(self) -> str:
        return self.username


def concerning(user: object) -> list[Lockout]:
    """The lockouts ``user`` is shown: a superuser (the operator) every one;
    anyone else only their own username's. An address is shared by whoever
    signs in from it and its failures name other accounts, so it is the
    operator's."""
    found = current()
    if getattr(user, "is_superuser", False):
        return found
    mine = getattr(user, "get_username", lambda: None)()
    return [replace(lockout, address="") for lockout in found if lockout.username == mine]


def may_clear(user: object, *, username: str = "") -> bool:
    """Whether ``user`` may clear this lockout: a superuser any, anyone else their own username's only."""
    return bool(getattr(user, "is_superuser", False)) or (
        bool(username) and username == getattr(user, "get_username", lambda: None)()
    )


def _recent():
    return AccessAttempt.objects.filter(attempt_time__gte=timezone.now() - settings.AXES_COOLOFF_TIME)


def current() -> list[Lockout]:
    """Every (username, address) pair locked right now, and every username
    slowed down, the most recent first."""
    recent = _recent().exclude(username__isnull=True)
    pairs = (
        recent.values("username", "ip_address")
        .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        .filter(failures__gte=settings.AXES_FAILURE_LIMIT)
    )
    found = [Lockout("pair", row["username"], row["ip_address"] or "", row["failures"], row["last"]) for row in pairs]
    slowed = (
        recent.values("username")
        .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        .filter(failures__gte=settings.VETTED_LOGIN_SLOWDOWN_AFTER)
    )
    found += [Lockout("slowed", row["username"], "", row["failures"], row["last"]) for row in slowed]
    return sorted(found, key=lambda lockout: lockout.last_attempt, reverse=True)


def slowdown_seconds(username: str, address: str | None) -> int:
    """How long a sign-in as ``username`` from ``address`` must wait before
    its password is checked: 0 unless the username has
    VETTED_LOGIN_SLOWDOWN_AFTER failures (from all addresses) within the
    lockout period *and* this address is one of those that failed on it;
    then one check per VETTED_LOGIN_SLOWDOWN_SECONDS after the username's
    latest failure. An address that has not failed on it is never held back:
    the right password from there keeps working during an attack."""
    attempts = _recent().filter(username=username)
    seen = attempts.aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
    if (seen["failures"] or 0) < settings.VETTED_LOGIN_SLOWDOWN_AFTER or seen["last"] is None:
        return 0
    if not attempts.filter(ip_address=address).exists():
        return 0
    left = settings.VETTED_LOGIN_SLOWDOWN_SECONDS - (timezone.now() - seen["last"]).total_seconds()
    return max(0, math.ceil(left))


def guesses_per_hour(addresses: int) -> int:
    """The most password checks an attacker gets on one username in an hour
    from ``addresses`` addresses (what docs/security-doors.md states): each
    address at most AXES_FAILURE_LIMIT per lockout period; once the username
    is slowed, one per VETTED_LOGIN_SLOWDOWN_SECONDS from the addresses that
    failed, plus one from each address that had not."""
    periods = math.ceil(60 / settings.VETTED_LOGIN_LOCKOUT_MINUTES)
    unslowed = settings.AXES_FAILURE_LIMIT * periods * addresses
    slowed = periods * settings.VETTED_LOGIN_SLOWDOWN_AFTER + 3600 // settings.VETTED_LOGIN_SLOWDOWN_SECONDS + addresses
    return min(unslowed, slowed)


@receiver(user_locked_out, dispatch_uid="vetted.lockout_logged")
def _log_lockout(sender, request=None, username=None, ip_address=None, **kwargs):
    wait = getattr(request, "vetted_login_wait", 0)
    if wait:
        log.warning(
            "Sign-in slowed down: username %r has failed from many addresses; address %s waits %s s.",
            username or "",
            ip_address or "unknown",
            wait,
        )
        return
    log.warning(
        "Sign-in locked for %s min after %s failed attempts: username %r from address %s. "
        "The reviewer can clear it on Settings or with `%s`.",
        minutes(),
        settings.AXES_FAILURE_LIMIT,
        username or "",
        ip_address or "unknown",
        how_to_clear(username=username or ""),
    )
