from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connections

from common.cli import progress_bar
from common.env import database_entry
from retrieval.engines import sqlite_to_postgres as copy


class Command(BaseCommand):
    help = (
        "Copy this instance from its SQLite database into an empty PostgreSQL database: every row "
        "with its id (records, proposals, agents and their tokens, spaces, memberships, OAuth, the write log), "
        "the approved text on file, checksums, chunks and vectors. The target is migrated first; a target with "
        "rows is refused. Then point VETTED_DATABASE_URL at it and run `vetted index check`."
    )

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, metavar="postgresql://…", help="the empty target database")

    def handle(self, *args, **opts):
        try:
            entry = database_entry(opts["to"], "--to")
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        target = copy.open_target(entry)
        try:
            try:
                copy.refuse_unless_ready(connections["default"], target)
                copy.migrate_target()
                bar = progress_bar(copy.rows_to_copy(), "copy", "row")
                try:
                    summary = copy.copy_database(connections[copy.TARGET], progress=bar.update)
                finally:
                    bar.close()
            except copy.CopyRefused as exc:
                raise CommandError(str(exc)) from None
            except (DatabaseError, ImproperlyConfigured) as exc:
                raise CommandError(
                    f"The copy failed and was rolled back (the target is migrated and still empty): {exc}"
                ) from exc
        finally:
            copy.close_target()
        for table, count in sorted(summary.rows.items()):
            self.stdout.write(f"{table:<32} {count:>9}")
        self.stdout.write(f"{'vectors':<32} {summary.vectors:>9}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Copied into {entry['NAME']}. Next: set VETTED_DATABASE_URL to that URL and run `vetted index check`."
            )
        )
