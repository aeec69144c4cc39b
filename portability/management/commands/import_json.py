import json
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from common.cli import dumps, resolve_reviewer
from reviews import actions, snapshot
from reviews.errors import VettedError


class Command(BaseCommand):
    help = (
        "Load a vetted-export JSON document (from export_json) into this instance, which must hold no "
        "records and no proposals yet. All or nothing. Records, statuses, checksums, supersession chains, "
        "proposals, agents and the write log come back as they were; users named in the file map onto "
        "accounts with the same username or are created inactive; spaces and agents already here gain the file's "
        "missing members and grants, and a conflicting role or rule refuses the import. Then the search "
        "vectors are computed (--no-sync leaves that to `reindex` or the next `serve`)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="a file written by export_json, or - for standard input")
        parser.add_argument("--reviewer", help="who performs the import (default: the only superuser)")
        parser.add_argument("--no-sync", action="store_true", help="do not compute search vectors now")

    def handle(self, *args, **opts):
        if not get_user_model().objects.filter(is_active=True).exists() and not opts["reviewer"]:
            raise CommandError(
                "No reviewer account exists yet. Create yours first (`python manage.py "
                "createsuperuser`, with the username you had, to keep your history linked), "
                "then run import_json again."
            )
        reviewer = resolve_reviewer(opts["reviewer"])
        data = self._read(opts["file"])
        total = sum(len(data.get(k) or []) for k in ("records", "proposals", "audit")) if isinstance(data, dict) else 0
        progress = tqdm(total=total, unit="row", file=sys.stderr, disable=None, desc="import")
        try:
            summary = actions.import_snapshot(data, actor=reviewer, progress=progress.update)
        except snapshot.SnapshotInvalid as exc:
            progress.close()
            for problem in exc.problems[:50]:
                self.stderr.write(f"  {problem}")
            if len(exc.problems) > 50:
                self.stderr.write(f"  ... and {len(exc.problems) - 50} more")
            shown = "; ".join(exc.problems[:5]) + (
                f"; and {len(exc.problems) - 5} more (listed above)" if len(exc.problems) > 5 else ""
            )
            raise CommandError(
                f"{opts['file']} cannot be imported ({len(exc.problems)} problem(s)): {shown}. Nothing was written."
            ) from None
        except VettedError as exc:
            progress.close()
            raise CommandError(f"{exc.message} Nothing was written.") from None
        progress.close()
        d = summary.details
        notes = []
        if d["agents_without_token"]:
            notes.append(
                f"agents without a working token (the file has no token digests): "
                f"{', '.join(d['agents_without_token'])}; give each a new one with "
                "`vetted connect CLIENT --agent NAME --rotate`"
            )
        if d["users_created_inactive"]:
            notes.append(f"users created inactive, without a password: {', '.join(d['users_created_inactive'])}")
        if d["edited_since_approval"]:
            notes.append(
                f"{len(d['edited_since_approval'])} record(s) were already edited since approval "
                "(kept as they are; search withholds them)"
            )
        # What merged into spaces and agents this instance already had
        if d["members_added"]:
            added = ", ".join(f"{m['user']} ({m['role']}) to {m['space']}" for m in d["members_added"])
            notes.append(f"members added to spaces that were already here: {added}")
        if d["grants_added"]:
            added = ", ".join(f"{g['space']} to {g['agent']}" for g in d["grants_added"])
            notes.append(f"grants added to agents that were already here: {added}")
        if d["audit_id_offset"]:
            notes.append(f"audit event ids shifted by {d['audit_id_offset']} (this instance already had events)")
        synced = self._sync(opts["no_sync"], notes)
        c = summary.counts
        self.stderr.write(
            f"Imported {c['records']} record(s), {c['proposals']} proposal(s), {c['agents']} agent(s) "
            f"and {c['audit']} audit event(s)."
        )
        for note in notes:
            self.stderr.write(f"Note: {note}.")
        self.stdout.write(dumps({**summary.as_dict(), "vectors_synced": synced}))

    def _sync(self, skip: bool, notes: list[str]) -> bool:
        if skip:
            notes.append("search vectors not computed yet: run `vetted index rebuild` (or start `serve`)")
            return False
        from retrieval import index
        from retrieval.embeddings import get_embedder

        try:
            index.sync(get_embedder())
        except Exception as exc:  # noqa: BLE001 - the import is committed; say what to run
            notes.append(f"computing search vectors failed ({exc}); run `vetted index rebuild`")
            return False
        return True

    def _read(self, path):
        try:
            if path == "-":
                raw = sys.stdin.buffer.read()
            else:
                with open(path, "rb") as handle:
                    raw = handle.read()
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            return json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path} is not UTF-8 text (byte {exc.start}); nothing was written.") from None
        except json.JSONDecodeError as exc:
            raise CommandError(
                f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; nothing was written."
            ) from None
