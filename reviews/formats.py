"""How dates and times are written out, once (API answers, exports, front matter)."""

from __future__ import annotations

from datetime import UTC, date, datetime


def iso(value: date | datetime | None) -> str | None:
    """ISO 8601 (a datetime keeps its offset and microseconds), or None."""
    return None if value is None else value.isoformat()


def iso_utc_seconds(value: datetime | None) -> str | None:
    """UTC to the second with a Z (2026-11-30T09:00:00Z): for files people read."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
