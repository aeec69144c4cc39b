"""Shared argument handling for the retrieval commands."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import CommandError

from common.cli import iso_date
from reviews import history
from reviews.errors import ValidationFailed
from reviews.history import Moment
from reviews.space_access import space_slugs
from reviews.validation import kinds

from .gate import Reader
from .search import MODES, Filters


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", default="hybrid", choices=MODES)
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument(
        "--space",
        action="append",
        default=[],
        help="read as a reader of these spaces (slugs); repeatable; default all",
    )
    parser.add_argument("--kind", action="append", default=[], help="only these kinds; repeatable")
    parser.add_argument("--tag", action="append", default=[], help="records with any of these tags; repeatable")
    parser.add_argument("--all-tags", action="append", default=[], help="records with all of these tags; repeatable")
    parser.add_argument("--agent", default="", help="only records proposed by this agent")
    parser.add_argument("--approved-after", type=iso_date)
    parser.add_argument("--approved-before", type=iso_date)
    parser.add_argument("--verified-after", type=iso_date)
    parser.add_argument("--verified-before", type=iso_date)
    parser.add_argument("--min-confidence", type=float)
    # as_of: a reader may ask what was deliverable at a past moment
    parser.add_argument("--as-of", help="what the reader would have received at this past moment (date or date-time)")
    parser.add_argument("--valid-at", help="records whose validity window holds this day (YYYY-MM-DD)")


def moment_from(opts: dict[str, Any]) -> Moment | None:
    try:
        return history.clean_moment(opts.get("as_of"), opts.get("valid_at"))
    except ValidationFailed as exc:
        raise CommandError(
            "; ".join(f"--{name.replace('_', '-')}: {text}" for name, text in exc.fields.items())
        ) from None


def reader_from(opts: dict[str, Any]) -> Reader:
    spaces = [s.strip().lower() for part in opts["space"] for s in part.split(",") if s.strip()]
    known = space_slugs()
    bad = [s for s in spaces if s not in known]
    if bad:
        raise CommandError(f"Unknown space {', '.join(bad)}; allowed: {', '.join(known)}.")
    return Reader.for_spaces(spaces) if spaces else Reader.everything()


def filters_from(opts: dict[str, Any]) -> Filters:
    allowed = kinds()
    bad = [k for k in opts["kind"] if k not in allowed]
    if bad:
        raise CommandError(f"Unknown kind {', '.join(bad)}; allowed: {', '.join(sorted(allowed))}.")
    return Filters(
        kinds=list(opts["kind"]),
        tags_any=[t.lower() for t in opts["tag"]],
        tags_all=[t.lower() for t in opts["all_tags"]],
        agent=opts["agent"],
        approved_after=opts["approved_after"],
        approved_before=opts["approved_before"],
        verified_after=opts["verified_after"],
        verified_before=opts["verified_before"],
        min_confidence=opts["min_confidence"],
    )
