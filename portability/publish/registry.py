"""Publications `serve` keeps in step: the ones a person asked to remember
(`publish --remember`), in ``VETTED_HOME/publications.json``. Nothing is
followed unless remembered."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from common.files import write_atomic

from .selection import Selection

NAME = "publications.json"


def _path() -> Path:
    return Path(settings.VETTED_HOME) / NAME


def remembered() -> list[tuple[list[Path], Selection]]:
    try:
        rows = json.loads(_path().read_text("utf-8"))["publications"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    out = []
    for row in rows:
        selection = Selection(
            person=row["person"],
            spaces=tuple(row["spaces"]),
            kinds=tuple(row.get("kinds", ())),
            tags=tuple(row.get("tags", ())),
            shared=bool(row.get("shared")),
        )
        out.append(([Path(p) for p in row["files"]], selection))
    return out


def _write(publications: list[tuple[list[Path], Selection]]) -> None:
    rows = [
        {**selection.describe(), "shared": selection.shared, "files": [str(p) for p in paths]}
        for paths, selection in publications
    ]
    write_atomic(_path(), json.dumps({"publications": rows}, indent=1) + "\n")


def remember(paths: list[Path], selection: Selection) -> None:
    """Follow ``paths`` with ``selection`` from now on (replacing an earlier publication of any of them)."""
    resolved = [p.resolve() for p in paths]
    kept = [(ps, s) for ps, s in remembered() if not {p.resolve() for p in ps} & set(resolved)]
    _write([*kept, (resolved, selection)])


def forget(paths: list[Path]) -> int:
    """Stop following ``paths``; returns how many publications were dropped."""
    resolved = {p.resolve() for p in paths}
    before = remembered()
    kept = [(ps, s) for ps, s in before if not {p.resolve() for p in ps} & resolved]
    _write(kept)
    return len(before) - len(kept)
