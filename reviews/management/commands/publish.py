from django.core.management.base import BaseCommand, CommandError

from memory_site.cli import dumps
from memory_site.space_args import add_space_argument, spaces_from
from reviews.portability import publish


class Command(BaseCommand):
    help = (
        "Keep a managed block (between <!-- vetted:begin --> and <!-- vetted:end --> comments) in the files your "
        "AI tools read (CLAUDE.md, AGENTS.md, GEMINI.md, .cursor/rules/vetted.mdc, .github/copilot-instructions.md, "
        ".windsurfrules, any path), filled with the deliverable records of the spaces, kinds and tags you name. "
        "Text outside the block is never changed; files are written atomically and kept within each tool's size "
        "budget. A hand edit inside the block becomes a proposal from --person and the block is held until it is "
        "decided. The last line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", help="the files to keep in step (created if missing)")
        parser.add_argument("--person", required=True, help="whose publication this is (their account name)")
        add_space_argument(parser, many=True, required=True, help="a space to publish (repeat, or a,b)")
        parser.add_argument("--kind", action="append", default=[], help="only records of this kind (repeatable)")
        parser.add_argument("--tag", action="append", default=[], help="only records with this tag (repeatable)")
        parser.add_argument(
            "--shared",
            action="store_true",
            help="the files live in a repository others read: team spaces only, never a personal one",
        )
        parser.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")

    def handle(self, *args, **opts):
        selection = publish.Selection(
            person=opts["person"],
            spaces=tuple(spaces_from(opts, self.stderr)),
            kinds=tuple(k.strip().lower() for k in opts["kind"]),
            tags=tuple(t.strip().lower() for t in opts["tag"]),
            shared=opts["shared"],
        )
        try:
            selection.checked()
        except publish.SelectionError as exc:
            raise CommandError(str(exc)) from None
        results = [publish.publish_file(path, selection, dry_run=opts["dry_run"]) for path in opts["files"]]
        for result in results:
            cut = f", {result.left_out} left out (size budget)" if result.left_out else ""
            self.stdout.write(f"{result.path}: {result.state} ({len(result.records)} record(s){cut})")
            for diff in result.diffs:
                self.stdout.write(diff)
            if result.proposals:
                self.stdout.write(f"  hand edits filed as proposal(s): {', '.join(result.proposals)}")
            for problem in result.problems:
                self.stderr.write(f"{result.path}: {problem}")
        self.stdout.write(dumps({"selection": selection.describe(), "files": [r.as_dict() for r in results]}))
