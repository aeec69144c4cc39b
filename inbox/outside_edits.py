"""Which live records were changed outside Vetted, cheaply enough for the
header on every page.

"Changed outside Vetted" is Record.edited_since_approval (a SHA-256 of the
canonical text, computed in Python): for every live record on every page
that costs about 17 µs a record (the canonical JSON and the hash). So each
process remembers, per record, a fingerprint of the row as last read (the
Python hash of its checksummed columns and approved checksum, keyed per
process, so it cannot be aimed at) and the answer for it; a page reads the
small columns of every live row in one query and re-checks, through the
model's one rule, only rows whose fingerprint changed. A change made by any
means (raw SQL included) changes the row, so it is seen on the next page.

Spaces: the scan and its memory span every space, but a page
is told only of the records the viewer may read (``viewer.readable``), so
neither the count nor the list names another space's edits.

The count is a reviewer's signpost, never a delivery decision: the gate
re-checks the SHA-256 of every record it delivers.
"""

from __future__ import annotations

import threading

from django.db import connection

from reviews.checksum import CHECKSUM_FIELDS
from reviews.models import LIVE_STATUSES, Record

from . import viewer

_lock = threading.Lock()
# pk -> (fingerprint of the row as last read, edited since approval?)
_seen: dict[int, tuple[int, bool]] = {}
_COLUMNS = ("id", *CHECKSUM_FIELDS, "approved_checksum")
_SPACE = _COLUMNS.index("space")


def edited_ids() -> list[int]:
    """Primary keys of the live records whose text is not what was approved,
    in the spaces the viewer may read (every space outside a request)."""
    table = connection.ops.quote_name(Record._meta.db_table)
    marks = ", ".join(["%s"] * len(LIVE_STATUSES))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(_COLUMNS)} FROM {table} WHERE status IN ({marks})", list(LIVE_STATUSES))
        rows = cursor.fetchall()
    with _lock:
        known = dict(_seen)
    fingerprints = {row[0]: hash(row) for row in rows}
    readable = viewer.readable()
    shown = {row[0] for row in rows if readable is None or row[_SPACE] in readable}
    stale = [pk for pk, fp in fingerprints.items() if known.get(pk, (None, False))[0] != fp]
    answers = {pk: known[pk][1] for pk in fingerprints if pk not in stale}
    for start in range(0, len(stale), 500):
        for record in Record.objects.filter(pk__in=stale[start : start + 500]):
            answers[record.pk] = record.edited_since_approval
    fresh = {pk: (fp, answers.get(pk, False)) for pk, fp in fingerprints.items()}
    with _lock:
        _seen.clear()
        _seen.update(fresh)
    return sorted(pk for pk, (_fp, edited) in fresh.items() if edited and pk in shown)


def edited_count() -> int:
    return len(edited_ids())
