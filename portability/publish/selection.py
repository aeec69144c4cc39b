"""What a publication holds: one person's choice of spaces, kinds and tags,
checked against what that person may read; for a shared (team repository)
file, team spaces only. Deliverable means what the gate means
(``Record.objects.deliverable`` and ``withhold_reason``), so a retired,
overdue, disputed or changed record leaves the block at the next sync."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from reviews import validation as v
from reviews.models import Record
from reviews.space_access import owned_spaces, readable_spaces
from reviews.space_models import Space, SpaceKind


class SelectionError(Exception):
    """The selection is not allowed or not valid (said for a person)."""


@dataclass(frozen=True)
class Selection:
    person: str
    spaces: tuple[str, ...]
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    shared: bool = False  # the file lives in a repository others read

    def checked(self) -> Selection:
        """This selection, or SelectionError saying what is not allowed."""
        user = get_user_model().objects.filter(username=self.person, is_active=True).first()
        if user is None:
            raise SelectionError(f"No active account named {self.person!r}.")
        if not self.spaces:
            raise SelectionError("Name at least one space to publish.")
        readable = set(readable_spaces(user))
        kinds_of = dict(Space.objects.filter(slug__in=self.spaces).values_list("slug", "kind"))
        for slug in self.spaces:
            if slug not in readable:
                raise SelectionError(f"{self.person} may not read the space {slug!r}; publish only spaces you read.")
            if kinds_of.get(slug) == SpaceKind.PERSONAL:
                if self.shared:
                    raise SelectionError(
                        f"{slug!r} is a personal space; a shared file (a team repository) takes team spaces only."
                    )
                if slug not in owned_spaces(user):
                    raise SelectionError(f"{slug!r} is another person's personal space; publish only your own.")
        for kind in self.kinds:
            if kind not in v.kinds():
                raise SelectionError(f"Unknown kind {kind!r}; allowed kinds: {', '.join(sorted(v.kinds()))}.")
        return self

    def user(self):
        return get_user_model().objects.get(username=self.person)

    def records(self) -> list[Record]:
        """The deliverable records this selection names, in a stable order."""
        rows = Record.objects.deliverable(self.spaces)
        if self.kinds:
            rows = rows.filter(kind__in=self.kinds)
        out = []
        for record in rows.order_by("public_id"):
            if record.withhold_reason() is not None:  # the checksum: changed outside Vetted
                continue
            if self.tags and not set(self.tags) & set(record.tags or []):
                continue
            out.append(record)
        return out

    def describe(self) -> dict:
        return {"person": self.person, "spaces": list(self.spaces), "kinds": list(self.kinds), "tags": list(self.tags)}


@dataclass
class Held:
    """Hand edits found in a block, each filed (or already filed) as a proposal."""

    proposals: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
