import signal
import threading
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.cli import dumps
from portability import publish
from portability.publish import registry
from portability.publish.follow import follow
from portability.vault import VaultBusy
from reviews.space_args import add_space_argument, spaces_from


class Command(BaseCommand):
    help = (
        "Keep a managed block (between vetted:begin and vetted:end marker comments) in the files your "
        "AI tools read (CLAUDE.md, AGENTS.md, GEMINI.md, .cursor/rules/vetted.mdc, .github/copilot-instructions.md, "
        ".windsurfrules, any path), filled with the deliverable records of the spaces, kinds and tags you name. "
        "Text outside the block is never changed; files are written atomically and kept within each tool's size "
        "budget. A hand edit inside the block becomes a proposal from --person and the block is held until it is "
        "decided. The last line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", help="the files to keep in step (created if missing)")
        parser.add_argument("--person", help="whose publication this is (their account name); required")
        add_space_argument(parser, many=True, required=True, help="a space to publish (repeat, or a,b)")
        parser.add_argument("--kind", action="append", default=[], help="only records of this kind (repeatable)")
        parser.add_argument("--tag", action="append", default=[], help="only records with this tag (repeatable)")
        parser.add_argument(
            "--shared",
            action="store_true",
            help="the files live in a repository others read: team spaces only, never a personal one",
        )
        parser.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
        parser.add_argument(
            "--remember",
            action="store_true",
            help="also let `serve` keep these files in step from now on (after each decision)",
        )
        parser.add_argument("--forget", action="store_true", help="stop `serve` following these files; write nothing")
        parser.add_argument(
            "--watch",
            action="store_true",
            help="keep the files in step until interrupted: after each decision and each edit of a file "
            "(one process per set of files; another waits and takes over)",
        )

    def handle(self, *args, **opts):
        if opts["forget"]:
            dropped = registry.forget([Path(p) for p in opts["files"]])
            self.stdout.write(f"{dropped} remembered publication(s) dropped.")
            return
        if not opts["person"]:
            raise CommandError("--person is required: whose publication this is (an account name).")
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
        if opts["watch"]:
            return self._follow([Path(p) for p in opts["files"]], selection)
        results = [publish.publish_file(path, selection, dry_run=opts["dry_run"]) for path in opts["files"]]
        self._report(results)
        if opts["remember"] and not opts["dry_run"]:
            registry.remember([Path(p) for p in opts["files"]], selection)
            self.stdout.write("Remembered: `serve` keeps these files in step from now on.")
        self.stdout.write(dumps({"selection": selection.describe(), "files": [r.as_dict() for r in results]}))

    def _follow(self, paths, selection):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        self.stdout.write(f"Keeping {len(paths)} file(s) in step (Ctrl-C to stop).")
        while not stop.is_set():
            try:
                follow(paths, selection, stop=stop, on_sync=self._report)
            except VaultBusy as exc:
                self.stderr.write(f"{exc} Waiting to take over.")
                stop.wait(5)

    def _report(self, results):
        for result in results:
            cut = f", {result.left_out} left out (size budget)" if result.left_out else ""
            self.stdout.write(f"{result.path}: {result.state} ({len(result.records)} record(s){cut})")
            for diff in result.diffs:
                self.stdout.write(diff)
            if result.proposals:
                self.stdout.write(f"  hand edits filed as proposal(s): {', '.join(result.proposals)}")
            for problem in result.problems:
                self.stderr.write(f"{result.path}: {problem}")
        self.stdout.flush()
