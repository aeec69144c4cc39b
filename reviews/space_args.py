"""``--space`` for management commands. Slugs are checked against the
spaces that exist; the old name ``--scope`` is not taken (argparse refuses
it by name)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError


def add_space_argument(parser: Any, *, many: bool, required: bool, help: str) -> None:
    action = "append" if many else "store"
    parser.add_argument("--space", action=action, dest="space", metavar="SLUG", help=help)
    parser.set_defaults(_space_required=required)


def spaces_from(opts: dict[str, Any], stderr: Any) -> list[str]:
    """The slugs given with --space (repeated or comma-separated), checked; [] if none."""
    from reviews.space_access import space_slugs

    given = opts.get("space")
    raw: list[str] = [*given] if isinstance(given, list) else [given] if given else []
    slugs = [s.strip().lower() for part in raw for s in part.split(",") if s.strip()]
    known = space_slugs()
    bad = [s for s in slugs if s not in known]
    if bad:
        raise CommandError(f"No space {', '.join(bad)}; spaces: {', '.join(known)} (`manage.py space list`).")
    if opts.get("_space_required") and not slugs:
        raise CommandError(f"--space is required: one of {', '.join(known)}.")
    return list(dict.fromkeys(slugs))
