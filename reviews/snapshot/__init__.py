"""Export and import of a whole instance as one JSON document.

Format (``"format": "vetted-export", "version": 3``; see docs/backup.md):

    {"format": "vetted-export", "version": 3, "exported_at": ISO-8601,
     "space_slugs": [...], "spaces": [...], "include_token_digests": bool,
     "records": [...], "proposals": [...], "agents": [...], "audit": [...]}

Every model field is written; foreign keys become public ids (records,
proposals, agents) or usernames (users); datetimes are ISO 8601 with their
offset, dates YYYY-MM-DD. Audit events keep their integer ``id``.
Version 2 added a record's ``approved_content`` (null, or an object with
exactly the checksummed fields that must match ``approved_checksum``);
version 1 files still import, each record's copy derived as migration 0003
does (kept if its text matches its checksum, else null). Version 3 calls the
space ``space`` everywhere; ``legacy`` reads the old names of versions 1 and 2.

With a subset of spaces, a file holds only the records in those spaces,
the proposals about them, and the audit events whose every record and
proposal id belongs to the file: a personal record never appears in a team
export, not even as a link, an id or a title in an audit snippet.
Supersession links to records outside the exported spaces are cut (null).

Modules: ``format`` (the fields), ``legacy`` (old versions' names), ``check`` (validate_snapshot: every
problem at once), ``load`` (write_snapshot). The export is
portability/json_export.py; the import itself (the state change) is
``reviews.actions.import_snapshot``, which checks and loads through here.
"""

from .check import validate_snapshot
from .format import FORMAT, VERSION, SnapshotInvalid
from .legacy import upgrade
from .load import write_snapshot

__all__ = ["FORMAT", "VERSION", "SnapshotInvalid", "upgrade", "validate_snapshot", "write_snapshot"]
