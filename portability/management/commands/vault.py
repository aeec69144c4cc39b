import signal
import threading
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.cli import dumps
from portability import vault
from portability.vault.state import VaultError


class Command(BaseCommand):
    help = (
        "Keep a folder of Markdown notes (an Obsidian vault) in step with one person's approved memory: one note "
        "per deliverable record of the spaces they may read, an index note per space, _pending/ for what waits. "
        "Edits to a note become revision proposals from that person, new notes in _inbox/ create proposals, "
        "deleted notes retirement proposals; nothing is ever approved by the vault. Without --watch: one pass. "
        "With --watch: follows file events and decisions until stopped; only one process watches a folder (the "
        "one holding its lock file), another waits and takes over when it exits."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="the vault folder (an empty folder, or one this command made)")
        parser.add_argument("--person", required=True, help="whose vault (their account name)")
        parser.add_argument("--watch", action="store_true", help="keep watching until interrupted")

    def handle(self, *args, **opts):
        if not opts["watch"]:
            try:
                with vault.hold_vault(Path(opts["folder"])):
                    result = vault.reconcile(opts["folder"], opts["person"])
            except (VaultError, vault.VaultBusy) as exc:
                raise CommandError(str(exc)) from None
            self._report(result)
            self.stdout.write(dumps(result.summary()))
            return
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        self.stdout.write(f"Watching {opts['folder']} for {opts['person']} (Ctrl-C to stop).")
        self.stdout.flush()
        while not stop.is_set():
            try:
                vault.watch_vault(opts["folder"], opts["person"], stop=stop, on_pass=self._report)
            except vault.VaultBusy as exc:
                self.stderr.write(f"{exc} Waiting to take over.")
                stop.wait(5)
            except VaultError as exc:
                raise CommandError(str(exc)) from None

    def _report(self, result):
        for problem in result.problems:
            self.stderr.write(f"{problem['file']}: {problem['problem']}")
        if result.proposals:
            self.stdout.write(f"proposals filed: {', '.join(result.proposals)}")
            self.stdout.flush()
