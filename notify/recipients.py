"""Who is told what: notifications per person and space.

VETTED_NOTIFY_SPACES names the spaces notifications may carry titles of, by
slug or by kind ("team": every team space). Within those:

- an address in VETTED_NOTIFY_EMAIL that belongs to an account (any user
  with that e-mail, active or not) is a person's: it is told only what that
  person may be told now, the spaces they decide in (owner or reviewer) and
  rate-limit refusals of agents they are shown (space_access); once the
  person is deactivated or loses staff status, nothing. Addresses told the
  same get one message;
- only an address of no account at all, and the webhook, are the operator's
  channels (set by who runs the instance): they are told of every space listed;
- a person's feed lists only the spaces they decide in.

A personal space is told by default, listed or not, and only to its owner:
their account's e-mail address and their feed. Its titles never go to the
webhook or to an address of no account (the operator's channels), nor to
anyone else.

An event without a space (a test message) goes to everyone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from reviews import space_access
from reviews.space_models import Space, SpaceKind


def _listed() -> set[str]:
    return set(settings.VETTED_NOTIFY_SPACES)


def notified_slugs(slugs: Iterable[str]) -> set[str]:
    """Of ``slugs``, those told to someone: named by VETTED_NOTIFY_SPACES (by
    slug or kind), and every personal space (told to its owner only)."""
    listed = _listed()
    slugs = set(slugs)
    kinds = dict(Space.objects.filter(slug__in=slugs).values_list("slug", "kind"))
    return {s for s in slugs if s in listed or kinds.get(s) in listed or kinds.get(s) == SpaceKind.PERSONAL}


def personal_slugs(slugs: Iterable[str]) -> set[str]:
    """Of ``slugs``, the personal spaces."""
    return set(Space.objects.filter(slug__in=set(slugs), kind=SpaceKind.PERSONAL).values_list("slug", flat=True))


def for_operator(items: list[dict[str, str]]) -> list[dict[str, str]]:
    """What the operator's channels (the webhook, an address of no account)
    may carry: everything but a personal space's items."""
    personal = personal_slugs(i["space"] for i in items if i.get("space"))
    return [i for i in items if i.get("space", "") not in personal]


def wanted(slug: str) -> bool:
    """Whether an event of space ``slug`` may be told at all ("" = no space: yes)."""
    return not slug or bool(notified_slugs([slug]))


def spaces_of(user: Any) -> set[str]:
    """The spaces ``user`` is told of: they decide in them and they are
    listed, or it is a personal space they own (no one else's)."""
    told = notified_slugs(space_access.deciding_spaces(user))
    personal = personal_slugs(told)
    return (told - personal) | (personal & set(space_access.owned_spaces(user)))


def _accounts(address: str) -> list[Any]:
    """Every account with this address, whatever its state: an address that
    was a person's stays a person's (a deactivated account's address must
    not turn into an operator's channel that hears everything)."""
    return list(get_user_model().objects.filter(email__iexact=address))


def _may_be_told(user: Any) -> bool:
    return bool(user.is_active and user.is_staff)


def email_groups(items: list[dict[str, str]]) -> list[tuple[list[str], list[dict[str, str]]]]:
    """(addresses, items) for each distinct message the e-mail channel sends.
    ``items`` carry their event's space in "space" (stripped before sending)."""
    groups: dict[str, tuple[list[str], list[dict[str, str]]]] = {}
    for address in settings.VETTED_NOTIFY_EMAIL:
        accounts = _accounts(address)
        if accounts:
            # Several accounts sharing an address: only what all of them may be told.
            allowed = set.intersection(*(spaces_of(u) if _may_be_told(u) else set() for u in accounts))
            seen_agents = set.intersection(
                *(
                    set(space_access.agents_seen_by(u).values_list("name", flat=True)) if _may_be_told(u) else set()
                    for u in accounts
                )
            )
            mine = [i for i in items if _for(i, allowed, seen_agents)]
        else:
            mine = for_operator(items)
        if not mine:
            continue
        key = repr([sorted(i.items()) for i in mine])
        groups.setdefault(key, ([], mine))[0].append(address)
    return list(groups.values())


def _for(item: dict[str, str], allowed: set[str], seen_agents: set[str]) -> bool:
    if item["action"] == "rate_limited":
        return item["agent"] in seen_agents
    return not item.get("space") or item["space"] in allowed


def public(items: list[dict[str, str]]) -> list[dict[str, str]]:
    """Items as a payload carries them (space and event are for choosing recipients and the message kind)."""
    return [{k: v for k, v in i.items() if k not in ("space", "event")} for i in items]
