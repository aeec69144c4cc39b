import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from common.cli import dumps
from portability import markdown_io
from reviews.errors import VettedError
from reviews.models import Record, RecordStatus
from reviews.space_args import add_space_argument, spaces_from


class Command(BaseCommand):
    help = (
        "Export the approved records of one space as Markdown notes with YAML front matter, one file per "
        "record named <slug>--<id>.md (with --include-history, superseded, retired and disputed versions "
        "go to history/). Deterministic, Obsidian-readable, git-diffable. Refuses a folder holding another "
        "space's files; removes files of records no longer approved. The last line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", help="the folder to write (created if missing)")
        add_space_argument(parser, many=False, required=True, help="the one space to export (its slug)")
        parser.add_argument(
            "--include-history",
            action="store_true",
            help="also superseded, retired and disputed versions, under history/",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="overwrite or remove exported files even if they were edited since the export",
        )

    def handle(self, *args, **opts):
        opts["space"] = spaces_from(opts, self.stderr)[0]
        statuses = [RecordStatus.APPROVED, *(markdown_io.HISTORY_STATUSES if opts["include_history"] else ())]
        total = Record.objects.filter(space=opts["space"], status__in=statuses).count()
        progress = tqdm(total=total, unit="record", file=sys.stderr, disable=None, desc="export")
        try:
            result = markdown_io.export_markdown(
                opts["directory"],
                space=opts["space"],
                include_history=opts["include_history"],
                force=opts["force"],
                on_record=progress.update,
            )
        except (markdown_io.MarkdownError, VettedError) as exc:
            raise CommandError(getattr(exc, "message", str(exc))) from None
        finally:
            progress.close()
        for skipped in result.skipped:
            self.stderr.write(f"{skipped['id']}: not exported ({skipped['reason']})")
        history = f" and {result.history} older version(s)" if opts["include_history"] else ""
        self.stdout.write(
            f"Exported {result.records} {opts['space']} record(s){history} to {opts['directory']}: "
            f"{len(result.written)} file(s) written, {len(result.unchanged)} unchanged, {len(result.removed)} removed."
        )
        self.stdout.write(dumps(result.summary()))
