"""``--space`` for management commands, with ``--space`` as its deprecated
alias (spaces became spaces; the alias stays for one version and
says so on stderr). Slugs are checked against the spaces that exist."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

DEPRECATED = "--space is deprecated: use --space (the same space slug); --space goes in the next version."


def add_space_argument(parser: Any, *, many: bool, required: bool, help: str) -> None:
    action = "append" if many else "store"
    parser.add_argument("--space", action=action, dest="space", metavar="SLUG", help=help)
    parser.add_argument(
        "--space", action=action, dest="space_alias", metavar="SLUG", help="deprecated alias of --space"
    )
    parser.set_defaults(_space_required=required)


def spaces_from(opts: dict[str, Any], stderr: Any) -> list[str]:
    """The slugs given with --space (or the deprecated --space), checked; [] if none."""
    from reviews.space_access import space_slugs

    given = opts.get("space")
    alias = opts.get("space_alias")
    if alias:
        stderr.write(DEPRECATED)
    raw: list[str] = []
    for value in (given, alias):
        if value:
            raw.extend(value if isinstance(value, list) else [value])
    slugs = [s.strip().lower() for part in raw for s in part.split(",") if s.strip()]
    known = space_slugs()
    bad = [s for s in slugs if s not in known]
    if bad:
        raise CommandError(f"No space {', '.join(bad)}; spaces: {', '.join(known)} (`manage.py space list`).")
    if opts.get("_space_required") and not slugs:
        raise CommandError(f"--space is required: one of {', '.join(known)}.")
    return list(dict.fromkeys(slugs))
