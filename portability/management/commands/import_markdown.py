import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from common.cli import dumps, resolve_reviewer
from portability import markdown_io
from reviews.errors import VettedError
from reviews.space_args import add_space_argument, spaces_from
from reviews.validation import kinds


class Command(BaseCommand):
    help = (
        "Import a folder (or one file) of Markdown notes and CLAUDE.md / AGENTS.md instruction files as "
        "proposals from the 'import' agent; with --approve, you approve them. Files exported by "
        "export_markdown that are unchanged are skipped; edited ones become revise proposals of their record. "
        "Bad files are reported by name and the rest imported, unless --strict. The last line printed is a "
        "JSON summary; exit 1 if any file had an error."
    )

    def add_arguments(self, parser):
        parser.add_argument("source", help="a folder of .md files (searched recursively) or one .md file")
        add_space_argument(
            parser,
            many=False,
            required=False,
            help="the space (slug) to import into (default: each file's own space, else the export "
            "manifest's, else personal); files saying another space are errors",
        )
        parser.add_argument(
            "--kind",
            help="kind for files that do not name one (default: fact for notes, procedure for instruction files)",
        )
        parser.add_argument("--approve", action="store_true", help="approve everything as the reviewer running this")
        parser.add_argument("--reviewer", help="with --approve: who approves (default: the only superuser)")
        parser.add_argument("--strict", action="store_true", help="import nothing if any file has an error")

    def handle(self, *args, **opts):
        if opts["reviewer"] and not opts["approve"]:
            raise CommandError("--reviewer only applies with --approve (without it, files become proposals).")
        if opts["kind"] and opts["kind"].strip().lower() not in kinds():
            raise CommandError(f"Unknown kind {opts['kind']!r}; allowed kinds: {', '.join(sorted(kinds()))}.")
        reviewer = resolve_reviewer(opts["reviewer"]) if opts["approve"] else None
        given = spaces_from(opts, self.stderr)
        space = given[0] if given else None
        try:
            _base, files = markdown_io.collect_files(opts["source"])
        except markdown_io.MarkdownError as exc:
            raise CommandError(str(exc)) from None
        if not files:
            raise CommandError(f"{opts['source']} holds no Markdown files (.md, .markdown).")
        progress = tqdm(total=len(files), unit="file", file=sys.stderr, disable=None, desc="import")
        try:
            outcome = markdown_io.import_markdown(
                opts["source"],
                space=space,
                kind=opts["kind"],
                reviewer=reviewer,
                strict=opts["strict"],
                on_file=progress.update,
            )
        except markdown_io.StrictImportFailed as exc:
            progress.close()
            self._report(exc.outcome)
            self.stdout.write(exc.message)
            self.stdout.write(dumps({**exc.outcome.summary(), "new": 0, "revisions": 0, "ids": []}))
            raise CommandError(exc.message, returncode=1) from None
        except (markdown_io.MarkdownError, VettedError) as exc:
            progress.close()
            raise CommandError(getattr(exc, "message", str(exc))) from None
        progress.close()
        self._report(outcome)
        self.stdout.write(outcome.human())
        self.stdout.write(dumps(outcome.summary()))
        if outcome.errors:
            raise CommandError(
                f"{len(outcome.errors)} file(s) had errors (listed above); the rest were imported.", returncode=1
            )

    def _report(self, outcome):
        for err in outcome.errors:
            self.stderr.write(f"{err['file']}: {err['error']}")
        for dup in outcome.duplicates:
            self.stderr.write(f"{dup['file']}: duplicate of {dup['existing_id']} (skipped)")
        for skipped in outcome.skipped:
            self.stderr.write(f"{skipped['file']}: {skipped['reason']} (skipped)")
