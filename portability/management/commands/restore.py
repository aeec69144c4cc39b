import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from common.cli import Stages
from dbengine import database_engine
from portability import backup


class Command(BaseCommand):
    help = (
        "Replace the database with a backup. Refuses while the server runs (it asks /health on --port and "
        "checks VETTED_HOME/daemon.lock), checks the file first (integrity, a Vetted database, migrations "
        "not newer than this code), keeps a safety copy of the current database in VETTED_HOME/backups/, "
        "and removes stale -wal/-shm files."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a backup file (from `backup`)")
        parser.add_argument("--port", type=int, default=8765, help="the port the server would run on (default 8765)")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, *args, **opts):
        database = connections["default"]
        refusal = database_engine(database).restore_refusal(database.settings_dict, opts["path"])
        if refusal:
            raise CommandError(refusal)
        db_path = Path(str(settings.DATABASES["default"]["NAME"]))
        home = settings.VETTED_HOME
        busy = backup.server_running(opts["port"], home)
        if busy:
            raise CommandError(f"Not restoring: {busy}.")
        try:
            records = backup.check_candidate(opts["path"])
        except backup.BackupError as exc:
            raise CommandError(f"{exc} Nothing was changed.") from None
        if not opts["yes"]:
            if not sys.stdin.isatty():
                raise CommandError(
                    f"This replaces {db_path} with {opts['path']} ({records} records); pass --yes to confirm."
                )
            answer = input(
                f"Replace {db_path} with {opts['path']} ({records} records)? "
                "A safety copy of the current database is kept. [y/N] "
            )
            if answer.strip().lower() not in ("y", "yes"):
                raise CommandError("Not restored.")
        connections.close_all()
        stages = Stages("restore", 4)
        try:
            result = backup.restore_database(opts["path"], db_path=db_path, home=home, port=opts["port"], stage=stages)
        except backup.BackupError as exc:
            raise CommandError(str(exc)) from None
        finally:
            stages.close()
        if result.safety_copy:
            self.stdout.write(f"Kept a safety copy of the previous database: {result.safety_copy}")
        for path in result.removed:
            self.stdout.write(f"Removed stale {path.name}")
        self.stdout.write(f"Restored {result.records} record(s) from {result.restored_from} into {result.database}.")
        missing = backup.pending_migrations(result.database)
        if missing:
            self.stdout.write(
                f"The backup predates {len(missing)} migration(s) of this code: run "
                "`vetted manage migrate` (or `vetted serve`, which does)."
            )
        self.stdout.write(
            "Start the server again (`vetted serve`, or `make run`); it checks the search index at startup."
        )
