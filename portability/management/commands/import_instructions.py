import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from common.cli import dumps, resolve_reviewer
from portability import instructions
from reviews.errors import VettedError
from reviews.space_args import add_space_argument, spaces_from
from reviews.validation import kinds


class Command(BaseCommand):
    help = (
        "Import agent instruction files as proposals: CLAUDE.md (and the files its @path imports name, followed "
        "once and only inside the folder given), AGENTS.md, GEMINI.md, .github/copilot-instructions.md, Cursor "
        ".cursor/rules/*.mdc, .windsurfrules. Each bullet or section becomes one proposal with its file and line; "
        "the kind is guessed (procedure, preference, fact); a text repeated across files is proposed once. "
        "Nothing is approved unless --approve. Files it cannot read are refused by name, the rest imported. "
        "The last line printed is a JSON summary; exit 1 if anything was refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", help="folders (walked for instruction files) or files")
        add_space_argument(
            parser, many=False, required=False, help="the space (slug) to propose into (default: personal)"
        )
        parser.add_argument("--kind", help="one kind for every piece instead of guessing it")
        parser.add_argument(
            "--approve",
            action="store_true",
            help="accept each proposal as the reviewer running this (a decision like any other: the space's "
            "rules apply, and one they refuse stays pending)",
        )
        parser.add_argument("--reviewer", help="with --approve: who decides (default: the only superuser)")

    def handle(self, *args, **opts):
        if opts["reviewer"] and not opts["approve"]:
            raise CommandError("--reviewer only applies with --approve (without it, pieces become proposals).")
        if opts["kind"] and opts["kind"].strip().lower() not in kinds():
            raise CommandError(f"Unknown kind {opts['kind']!r}; allowed kinds: {', '.join(sorted(kinds()))}.")
        reviewer = resolve_reviewer(opts["reviewer"]) if opts["approve"] else None
        given = spaces_from(opts, self.stderr)
        progress = tqdm(unit="piece", file=sys.stderr, disable=None, desc="import")
        try:
            outcome = instructions.import_instructions(
                opts["paths"],
                space=given[0] if given else "personal",
                kind=opts["kind"],
                reviewer=reviewer,
                on_candidate=progress.update,
            )
        except VettedError as exc:
            raise CommandError(exc.message) from None
        finally:
            progress.close()
        for refused in outcome.refused:
            self.stderr.write(f"{refused['file']}: refused: {refused['reason']}")
        for skipped in outcome.skipped:
            self.stderr.write(f"{skipped['file']}: left out: {skipped['reason']}")
        for dup in outcome.duplicates:
            self.stderr.write(f"{dup['file']}: already known as {dup['existing_id']} (skipped)")
        for pending in outcome.left_pending:
            self.stderr.write(f"{pending['id']}: not approved: {pending['reason']}")
        for file, rows in outcome.by_file().items():
            self.stdout.write(f"{file}: {len(rows)} proposal(s) (inbox filter: ?file={file})")
        self.stdout.write(outcome.human())
        self.stdout.write(dumps(outcome.summary()))
        if outcome.refused:
            raise CommandError(
                f"{len(outcome.refused)} file(s) or import(s) refused (listed above); the rest were imported.",
                returncode=1,
            )
