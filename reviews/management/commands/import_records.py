import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from common.cli import dumps, resolve_reviewer
from reviews import actions
from reviews.errors import VettedError
from reviews.models import Agent

MAX_LINE_BYTES = 1_000_000


class Command(BaseCommand):
    help = (
        "Import records from a JSON Lines file: one object per line with title, body, kind, space and "
        "optional tags, review_by (YYYY-MM-DD), metadata. Without --approve each line becomes a pending "
        "proposal; with it, you approve them. All or nothing unless --partial. The last line printed is a "
        'JSON summary: {"created": n, "errors": [...], "ids": [...]}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to a .jsonl file, or - for standard input")
        parser.add_argument("--approve", action="store_true", help="approve every line as the reviewer running this")
        parser.add_argument("--agent", help="attribute the proposals to this agent (default: the 'import' agent)")
        parser.add_argument("--partial", action="store_true", help="import the valid lines even if some are bad")
        parser.add_argument("--reviewer", help="with --approve: who approves (default: the only superuser)")

    def handle(self, *args, **opts):
        if opts["reviewer"] and not opts["approve"]:
            raise CommandError("--reviewer only applies with --approve (without it, lines become proposals).")
        reviewer = resolve_reviewer(opts["reviewer"]) if opts["approve"] else None
        agent = None
        if opts["agent"]:
            name = opts["agent"].strip().lower()
            agent = Agent.objects.filter(name=name).first()
            if agent is None:
                raise CommandError(
                    f"No agent named {name!r}; create it with `vetted agent create` (`manage.py create_agent`)."
                )
            if not agent.is_active:
                raise CommandError(f"Agent {name!r} has been revoked; it can no longer propose.")
        rows, errors = self._read(opts["file"])
        progress = tqdm(total=len(rows), unit="line", file=sys.stderr, disable=None, desc="import")
        try:
            result = actions.import_records(
                rows,
                agent=agent,
                reviewer=reviewer,
                partial=opts["partial"],
                prior_errors=errors,
                reason=f"Imported from {Path(opts['file']).name}",
                on_row=progress.update,
            )
        except actions.ImportFailed as exc:
            progress.close()
            for err in exc.result.errors:
                self.stderr.write(f"line {err['line']}: {err['error']}")
            self.stdout.write(dumps({"created": 0, "errors": exc.result.errors, "ids": []}))
            raise CommandError(
                f"{len(exc.result.errors)} bad line(s); nothing was imported. Fix them, or use --partial.",
                returncode=1,
            ) from None
        except VettedError as exc:
            progress.close()
            raise CommandError(exc.message) from None
        progress.close()
        for err in result.errors:
            self.stderr.write(f"line {err['line']}: {err['error']} (skipped)")
        what = "records approved" if reviewer else "proposals waiting for review"
        self.stderr.write(f"{len(result.created)} {what}; {len(result.errors)} line(s) skipped.")
        self.stdout.write(dumps(result.summary()))

    def _read(self, path):
        """Parse every line; blank lines are skipped, bad JSON is reported by line number."""
        if path == "-":
            stream = sys.stdin.buffer
        else:
            try:
                stream = open(path, "rb")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None
        rows, errors = [], []
        with stream:
            for number, raw in enumerate(stream, start=1):
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # a UTF-8 byte order mark (Windows editors add one)
                if not raw.strip():
                    continue
                if len(raw) > MAX_LINE_BYTES:
                    errors.append({"line": number, "error": f"line is longer than {MAX_LINE_BYTES} bytes"})
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    errors.append({"line": number, "error": f"not valid UTF-8 (byte {exc.start})"})
                    continue
                try:
                    data = json.loads(text)
                except json.JSONDecodeError as exc:
                    errors.append({"line": number, "error": f"not valid JSON: {exc.msg} at column {exc.colno}"})
                    continue
                if not isinstance(data, dict):
                    errors.append({"line": number, "error": "must be a JSON object"})
                    continue
                rows.append((number, data))
        if not rows and not errors:
            raise CommandError(f"{path} holds no records (it is empty).")
        return rows, errors
