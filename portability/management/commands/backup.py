from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from common.cli import Stages, dumps
from dbengine import database_engine
from portability import backup


def human_size(size: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


class Command(BaseCommand):
    help = (
        "Copy the live database with SQLite's online backup API (safe while the server runs), check the copy "
        "(integrity, record count) and keep the newest --keep backups in its folder. Default PATH: "
        "VETTED_HOME/backups/vetted-YYYYmmdd-HHMMSS.sqlite3; a folder puts that name in it."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", help="backup file or folder (default: VETTED_HOME/backups/)")
        parser.add_argument(
            "--keep",
            type=int,
            default=10,
            help="keep this many vetted-*.sqlite3 backups in the folder, newest first (default 10)",
        )
        parser.add_argument("--json", action="store_true", help="print the result as one JSON line")

    def handle(self, *args, **opts):
        refusal = database_engine(connection).backup_refusal(connection.settings_dict, opts["path"])
        if refusal:  # the server's own tools make the copy
            raise CommandError(refusal)
        stages = Stages("backup", 3)
        try:
            result = backup.backup_database(
                Path(str(settings.DATABASES["default"]["NAME"])),
                home=settings.VETTED_HOME,
                dest=opts["path"],
                keep=opts["keep"],
                stage=stages,
            )
        except backup.BackupError as exc:
            raise CommandError(str(exc)) from None
        finally:
            stages.close()
        for path in result.pruned:
            self.stderr.write(f"Removed old backup {path} (keeping {opts['keep']}).")
        if opts["json"]:
            self.stdout.write(
                dumps(
                    {
                        "path": str(result.path),
                        "size": result.size,
                        "records": result.records,
                        "pruned": [str(p) for p in result.pruned],
                    }
                )
            )
        else:
            self.stdout.write(
                f"Backed up {result.records} record(s) to {result.path} ({human_size(result.size)}); integrity ok."
            )
