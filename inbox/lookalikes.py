"""Warnings for the reviewer about titles that imitate others.

A proposal's title is flagged when it mixes scripts in a way honest text
does not (reviews.confusables.mixed_script_warnings), or when it looks the
same as the title of a live record (same UTS #39 skeleton) while the
characters differ. The reviewer decides; nothing is refused here (exact and
look-alike copies of whole records are refused by the duplicate check).
Reads only.
"""

from __future__ import annotations

from collections.abc import Iterable

from common import textsafety
from reviews import confusables
from reviews.models import Proposal, Record, RecordStatus

from . import viewer

_LIVE = (RecordStatus.APPROVED, RecordStatus.DISPUTED)
_SHOWN_RECORDS = 3


def _difference(new: str, old: str) -> str:
    """What tells two look-alike titles apart, in the new title's terms."""
    extra = [ch for ch in dict.fromkeys(new) if ch not in old and not ch.isspace()]
    if extra:
        return "uses " + ", ".join(_char(ch) for ch in extra[: textsafety.LISTED])
    missing = [ch for ch in dict.fromkeys(old) if ch not in new and not ch.isspace()]
    return "differs in " + ", ".join(_char(ch) for ch in missing[: textsafety.LISTED])


def _char(ch: str) -> str:
    if textsafety.has_invisible(ch):
        return f"the invisible {textsafety.describe(ch)}"
    return confusables.letter(ch)


def warnings_for(proposals: Iterable[Proposal]) -> dict[int, list[str]]:
    """Warnings per proposal pk (only those with any), with one query for
    all the titles given."""
    titled = [p for p in proposals if p.title]
    keys = {p.pk: confusables.title_key(p.title) for p in titled}
    twins: dict[str, list[Record]] = {}
    if keys:
        # Only records the viewer may read: another space's title does not exist for them.
        rows = (
            viewer.records(Record.objects.filter(title_skeleton__in=set(keys.values()), status__in=_LIVE))
            .only("public_id", "title", "title_skeleton")
            .order_by("-approved_at")
        )
        for record in rows:
            twins.setdefault(record.title_skeleton, []).append(record)
    found: dict[int, list[str]] = {}
    for p in titled:
        warnings = [f"Title: {text}" for text in confusables.mixed_script_warnings(p.title)]
        look_alike = [r for r in twins.get(keys[p.pk], []) if r.title != p.title and r.pk != p.target_id]
        for record in look_alike[:_SHOWN_RECORDS]:
            warnings.append(
                f"Title looks like {record.public_id} '{record.title}' but {_difference(p.title, record.title)}"
            )
        if warnings:
            found[p.pk] = warnings
    return found


def annotate(proposals: Iterable[Proposal]) -> None:
    """Set ``lookalike_warnings`` on each proposal (the inbox cards read it)."""
    proposals = list(proposals)
    found = warnings_for(proposals)
    for p in proposals:
        p.lookalike_warnings = found.get(p.pk, [])  # type: ignore[attr-defined]  # for the card template
