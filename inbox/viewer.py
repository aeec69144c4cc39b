"""The spaces of the person viewing a page.

SpaceViewerMiddleware sets them for each signed-in request; the inbox's
querysets narrow to them, so a page shows proposals of the spaces its
viewer decides in and records of the spaces they may read, and another
person's space does not exist there (its ids are the same 404 as an unknown
one; no counts, no titles). The rule itself is reviews.space_access; the
actions check it again for every decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any, TypeVar

from django.db.models import QuerySet

from reviews import space_access


class _Viewer:
    """The signed-in person of one request; their spaces are read on first
    use (one query), so a page that never asks costs nothing."""

    def __init__(self, user: Any):
        self.user = user
        self._spaces: tuple[list[str], list[str]] | None = None
        self._owned: list[str] | None = None

    def spaces(self) -> tuple[list[str], list[str]]:
        if self._spaces is None:
            user = self.user
            if user is None or not user.is_authenticated:
                self._spaces = ([], [])
            else:
                self._spaces = space_access.spaces_and_deciding(user)
        return self._spaces

    def owned(self) -> list[str]:
        if self._owned is None:
            self._owned = space_access.owned_spaces(self.user) if self.user is not None else []
        return self._owned


_viewer: ContextVar[_Viewer | None] = ContextVar("vetted_viewer_spaces", default=None)

Q = TypeVar("Q", bound=QuerySet[Any])


def readable() -> list[str] | None:
    """Slugs the viewer may read; None outside a request (commands, benches)."""
    viewer = _viewer.get()
    return viewer.spaces()[0] if viewer is not None else None


def deciding() -> list[str] | None:
    viewer = _viewer.get()
    return viewer.spaces()[1] if viewer is not None else None


def records(queryset: Q) -> Q:
    """``queryset`` of records narrowed to what the viewer may read."""
    slugs = readable()
    return queryset if slugs is None else queryset.filter(space__in=slugs)


def proposals(queryset: Q) -> Q:
    """``queryset`` of proposals narrowed to the spaces the viewer decides in."""
    slugs = deciding()
    return queryset if slugs is None else queryset.filter(space_access.proposals_in(slugs))


def agents(rows: Q) -> Q:
    """The agents the viewer is shown (space_access.agents_seen_by, in SQL); every one outside a request."""
    viewer = _viewer.get()
    return rows if viewer is None else space_access.agents_seen_by(viewer.user, rows)  # type: ignore[return-value]


def shown_spaces(slugs: Iterable[str]) -> list[str]:
    """Of an agent's or grant's spaces, those the viewer may read: another
    person's space is not named to them, even as a grant."""
    seen = readable()
    return list(slugs) if seen is None else [s for s in slugs if s in seen]


class SpaceViewerMiddleware:
    def __init__(self, get_response: Callable[[Any], Any]):
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        token = _viewer.set(_Viewer(getattr(request, "user", None)))
        try:
            return self.get_response(request)
        finally:
            _viewer.reset(token)
