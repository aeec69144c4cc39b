import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from common.cli import dumps
from common.files import write_atomic
from portability import json_export
from reviews.models import AuditEvent, Proposal, Record
from reviews.space_args import add_space_argument, spaces_from


class Command(BaseCommand):
    help = (
        "Write records, proposals, agents and the write log to one JSON document (format vetted-export, "
        "version 1) that import_json loads into an empty instance. --space limits it to records in those "
        "spaces, the proposals about them and the events that mention nothing else. Agent token digests are "
        "left out unless --include-token-digests. `-` writes to standard output."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="where to write the JSON document (refuses to overwrite), or - for stdout")
        add_space_argument(
            parser, many=True, required=False, help="export only this space (slug); repeat for several (default: all)"
        )
        parser.add_argument(
            "--include-token-digests",
            action="store_true",
            help="keep agents' token digests, so their tokens keep working after import "
            "(treat the file like a password file)",
        )

    def handle(self, *args, **opts):
        opts["spaces"] = spaces_from(opts, self.stderr) or None
        path = opts["file"]
        if path != "-" and Path(path).exists():
            raise CommandError(f"{path} already exists; choose another name (export_json never overwrites).")
        if path != "-" and not Path(path).resolve().parent.is_dir():
            raise CommandError(f"Cannot write {path}: folder {Path(path).resolve().parent} does not exist.")
        total = Record.objects.count() + Proposal.objects.count() + AuditEvent.objects.count()
        progress = tqdm(total=total, unit="row", file=sys.stderr, disable=None, desc="export")
        with json_export.read_snapshot():  # one consistent view; writers are not blocked
            document = json_export.export_snapshot(
                opts["spaces"], include_token_digests=opts["include_token_digests"], progress=progress.update
            )
        progress.close()
        text = json.dumps(document, ensure_ascii=False, indent=1)
        if path == "-":
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        else:
            # Private (0600): the file holds the whole memory, token digests too if asked.
            write_atomic(Path(path).resolve(), text + "\n", mode=0o600)
        counts = json_export.export_counts(document)
        notes = document["notes"]
        summary = {
            "file": path,
            "spaces": document["space_slugs"],
            **counts,
            "token_digests": opts["include_token_digests"],
            **notes,
        }
        self.stderr.write(
            f"Exported {counts['records']} record(s), {counts['proposals']} proposal(s), {counts['agents']} agent(s) "
            f"and {counts['audit']} audit event(s) ({', '.join(document['space_slugs'])})."
            + ("" if opts["include_token_digests"] else " Token digests left out: agents need new tokens after import.")
            + (
                f" {notes['audit_events_left_out']} event(s) mentioning other spaces left out."
                if notes["audit_events_left_out"]
                else ""
            )
            + (
                f" {notes['cut_supersession_links']} supersession link(s) to other spaces cut."
                if notes["cut_supersession_links"]
                else ""
            )
        )
        if path != "-":
            self.stdout.write(dumps(summary))
