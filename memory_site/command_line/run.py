"""One management command run for `vetted`: Django set up here (not when
the command line starts), the command's own parser (so its --help reads
`vetted GROUP NAME`), and the system checks a terminal command needs."""

from __future__ import annotations

import os
import sys

# Django's checks of the web side (templates, URLs, the admin, static files)
# import every template tag library and the URL configuration, and through
# them DRF, the inbox and the search engine with numpy: about half a second
# before a command could print a line. `vetted serve` runs every check (so
# does `vetted manage check`); a command that reads or changes data runs the
# others (models, database, security, caches, ...).
WEB_CHECK_TAGS = frozenset({"admin", "templates", "urls", "staticfiles"})

# Commands whose log is their output: the daemon, and the notification sender
# run from cron (one line per delivery). The others log warnings only.
LOGGING_COMMANDS = frozenset({"serve", "notify"})


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured

    try:
        django.setup()
    except ImproperlyConfigured as exc:  # a bad setting: its reader names the variable
        sys.stderr.write(f"vetted: {exc}\n")
        raise SystemExit(1) from None


def run_command(name: str, prog: str, args: list[str], *, all_checks: bool = False) -> None:
    """Run management command ``name`` as ``prog`` ("vetted agent create")
    with ``args``; exits as the command does (a CommandError prints its
    message and exits 1)."""
    setup()
    from django.core.checks.registry import registry
    from django.core.management import get_commands, load_command_class
    from django.core.management.base import ALL_CHECKS

    if name not in LOGGING_COMMANDS and not os.environ.get("VETTED_LOG_LEVEL"):
        _quiet_logs()
    command = load_command_class(get_commands()[name], name)
    if not all_checks and command.requires_system_checks == ALL_CHECKS:
        command.requires_system_checks = sorted(registry.tags_available() - WEB_CHECK_TAGS)
    head, _, tail = prog.partition(" ")
    command.run_from_argv([head, tail, *args])


def _quiet_logs() -> None:
    """Vetted's loggers at WARNING: the INFO line of each audited change is
    the daemon's log for its operator; a command says what it did itself, and
    those lines would only interleave with its output (VETTED_LOG_LEVEL set
    by the person wins)."""
    import logging

    from django.conf import settings

    loggers = settings.LOGGING.get("loggers", {})
    for name in loggers if isinstance(loggers, dict) else ():
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


def run_django(prog: str, args: list[str]) -> None:
    """Any of Django's own commands (migrate, createsuperuser, check, ...)."""
    setup()
    if not os.environ.get("VETTED_LOG_LEVEL"):
        _quiet_logs()
    from django.core.management import ManagementUtility

    ManagementUtility([prog, *args]).execute()


def migrate_if_needed() -> None:
    """Apply the database migrations this code has and the database lacks (a
    fresh VETTED_HOME, or an update), saying so; nothing when there are none."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        sys.stderr.write(f"Applying {len(plan)} database migration(s)...\n")
        call_command("migrate", interactive=False, verbosity=0)
    connection.close()
