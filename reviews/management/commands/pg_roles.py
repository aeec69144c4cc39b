import re

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from common.env import database_entry
from dbengine.audit_log import ROLE_NAME, log_role_grants


class Command(BaseCommand):
    help = (
        "PostgreSQL: the statements that leave the application's role only SELECT and INSERT on the "
        "write log (reviews_auditevent), besides the append-only triggers: the log is handed to a NOLOGIN role "
        "of its own. Prints them; --apply URL runs them there as a superuser, in one transaction. Run after "
        "`migrate`; a later migration that alters the write log must then be run by a superuser."
    )

    def add_arguments(self, parser):
        parser.add_argument("--app-role", required=True, help="the role in VETTED_DATABASE_URL (the daemons')")
        parser.add_argument("--log-owner", default="vetted_log", help="the role to own the write log (made if missing)")
        parser.add_argument(
            "--apply", metavar="postgresql://superuser@…/db", default="", help="run the statements there"
        )

    def handle(self, *args, **opts):
        app_role, log_owner = opts["app_role"], opts["log_owner"]
        for option, value in (("--app-role", app_role), ("--log-owner", log_owner)):
            if not re.match(ROLE_NAME, value):
                raise CommandError(
                    f"{option} {value!r} is not a plain role name: lower-case letters, digits and _, "
                    "starting with a letter or _, at most 63 characters."
                )
        if app_role == log_owner:
            raise CommandError("--log-owner must be another role than --app-role (an owner holds every privilege).")
        statements = log_role_grants(app_role, log_owner)
        if not opts["apply"]:
            self.stdout.write("-- As a superuser, in the Vetted database, after `manage.py migrate`:")
            for sql in statements:
                self.stdout.write(f"{sql};")
            return
        self._apply(opts["apply"], app_role, statements)

    def _apply(self, url, app_role, statements):
        import psycopg

        try:
            database_entry(url, "--apply")  # the same checks and messages as VETTED_DATABASE_URL's
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        try:
            # libpq reads the URL itself (socket folders as ?host=, sslmode, ...).
            with psycopg.connect(url) as conn, conn.cursor() as cursor:
                cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", [app_role])
                row = cursor.fetchone()
                if row is None:
                    raise CommandError(f"There is no role {app_role!r} on that server (--app-role).")
                if row[0]:
                    raise CommandError(
                        f"{app_role!r} is a superuser, which passes every privilege check: no grant can bind it. "
                        "Give the daemons an ordinary role (the owner of the other tables)."
                    )
                for sql in statements:
                    cursor.execute(sql)
        except psycopg.Error as exc:
            raise CommandError(f"Could not apply the grants (nothing was changed): {str(exc).strip()}") from None
        self.stdout.write(self.style.SUCCESS(f"{app_role} may now only SELECT and INSERT on the write log."))
