"""Shared fixtures: a reviewer, agents, and records in a real SQLite file.

The test database is a file in a temporary VETTED_HOME (see
memory_site/settings_test.py), loaded through the same backend as
production, so sqlite-vec, WAL and the audit triggers are all real.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, cast

import hypothesis
import pytest
from django.db import connections
from django.test import TransactionTestCase

from dbengine import database_engine
from retrieval import tables
from reviews import actions

# Hypothesis profiles: "fast" (`make test-fast`, via VETTED_HYPOTHESIS=fast)
# runs a few examples of each property test; otherwise each test runs the
# number it asks for. Tests that set their own counts pass them through
# examples() / steps().
hypothesis.settings.register_profile("fast", max_examples=5, stateful_step_count=20)
FAST = os.environ.get("VETTED_HYPOTHESIS") == "fast"
hypothesis.settings.load_profile("fast" if FAST else "default")


def examples(n: int) -> int:
    """``n`` Hypothesis examples, or the fast profile's fewer."""
    return min(n, hypothesis.settings.get_profile("fast").max_examples) if FAST else n


def steps(n: int) -> int:
    """``n`` state-machine steps per example, or the fast profile's fewer."""
    return min(n, hypothesis.settings.get_profile("fast").stateful_step_count) if FAST else n


# --------------------------------------------------------------------------- parallel runs
# `make test` runs the suite on several processes (pytest-xdist, `-n`), then
# the tests marked serial alone: --serial=exclude leaves them out of the
# parallel pass, --serial=only runs nothing else. A plain `pytest` runs all
# of them in one process, as before. See docs/development-tests.md.


def pytest_addoption(parser):
    parser.addoption(
        "--serial",
        choices=("exclude", "only"),
        default=None,
        help="exclude: leave out the tests marked serial (for a parallel pass); only: run only those",
    )


def _split_serial(config, items) -> None:
    wanted = config.getoption("serial")
    if wanted is None:
        return
    only = wanted == "only"
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (keep if bool(item.get_closest_marker("serial")) == only else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_ignore_collect(collection_path, config):
    """Leave unimported a test module none of whose tests the run would
    select (every test `slow` under `-m "not slow ..."`; no `serial` test
    under --serial=only): pytest would import it only to deselect it all.
    Decided from the module's source (tests/collect_marks.py); None lets
    pytest decide as before. VETTED_COLLECT_ALL=1 imports everything."""
    if os.environ.get("VETTED_COLLECT_ALL") == "1" or collection_path.suffix != ".py":
        return None
    from tests.collect_marks import dropped_whole, leaves_out

    only = "serial" if config.getoption("serial") == "only" else ""
    if leaves_out(collection_path, expression=config.getoption("markexpr"), only_mark=only):
        return True
    # The PostgreSQL pass drops these marks (pytest_collection_modifyitems below).
    if POSTGRES and dropped_whole(collection_path, drop=POSTGRES_DROPS, unless="postgres_slow"):
        return True
    return None


def pytest_sessionfinish(session, exitstatus):
    # The serial pass of a selection with no serial test in it (say, one file)
    # has nothing to run: that is not a failure.
    if session.config.getoption("serial") == "only" and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


# --------------------------------------------------------------------------- PostgreSQL
# VETTED_TEST_ENGINE=postgres (memory_site/settings_test.py starts the server)
# runs the tests that touch the database, and only those: a test that never
# asks for the database runs the same code on either engine. Tests that start
# processes (slow), a browser or the real model, and those marked sqlite_only,
# stay on the SQLite pass.
POSTGRES = os.environ.get("VETTED_TEST_ENGINE") == "postgres"
# The real model's tests (model) measure the embedder, which no engine changes, and take minutes.
POSTGRES_DROPS = frozenset({"slow", "browser", "model", "sqlite_only"})
_DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}


def touches_database(item: pytest.Item) -> bool:
    if item.get_closest_marker("django_db"):
        return True
    return bool(_DB_FIXTURES & set(getattr(item, "fixturenames", ())))


def _xdist_groups(config, items) -> None:
    """`--dist loadgroup` sends the tests of one ``xdist_group`` to one worker,
    by a suffix "@name" xdist adds to their ids in each worker. pytest-xdist
    3.8 writes it to ``item._nodeid``, which pytest 9 no longer reads (the id
    is ``item._id``): the groups were silently ignored (a group's two tests
    ran on two workers, each building the module's 50-70 s fixture). Added
    here the way pytest 9 reads it, unless xdist already did."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        names = sorted(
            {
                str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                for mark in item.iter_markers("xdist_group")
            }
        )
        if names and "@" not in item.nodeid.rpartition("]")[2]:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def pytest_collection_modifyitems(config, items):
    _split_serial(config, items)
    _xdist_groups(config, items)
    if not POSTGRES:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        sqlite_only = any(item.get_closest_marker(mark) for mark in POSTGRES_DROPS)
        if item.get_closest_marker("postgres_slow"):  # several daemons: slow, and run on the PostgreSQL pass
            keep.append(item)
            continue
        (keep if touches_database(item) and not sqlite_only else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# --------------------------------------------------------------------------- the fast subset


@pytest.fixture(autouse=True)
def _log_levels_restored():
    """A `vetted` command run in process quiets Vetted's loggers to WARNING for
    the rest of its process (a person's terminal); a test worker lives on, so
    each test gets the configured levels back and later log assertions hold."""
    import logging

    from django.conf import settings

    loggers = cast(dict[str, Any], settings.LOGGING.get("loggers", {}))
    levels = {name: logging.getLogger(name).level for name in loggers}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture(autouse=True)
def _refusal_counts_cleared():
    """The gateway counts rate-limit refusals in memory for the sender's next
    message (notify/refusals.py). A worker process lives on: an earlier test's
    refused calls became "N call(s) refused" items in a later notify test's
    batch (a burst of 50 proposals made a digest of 52). Each test starts
    with none."""
    from notify import refusals

    refusals.take()


@pytest.fixture(autouse=True)
def _processes_only_in_slow_tests(request, monkeypatch):
    """`make test-fast` leaves out tests marked slow or browser, promising that
    the rest start no process: a test that starts one without the mark fails
    here, saying so (subprocess and multiprocessing both go through Popen)."""
    if request.node.get_closest_marker("slow") or request.node.get_closest_marker("browser"):
        return
    import subprocess

    def refuse(self, args, *rest, **kwargs):
        pytest.fail(
            f"{request.node.nodeid} starts a process ({str(args)[:80]}); mark it "
            "@pytest.mark.slow so `make test-fast` leaves it out",
            pytrace=False,
        )

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(os, "fork", lambda: pytest.fail(f"{request.node.nodeid} forks; mark it slow", pytrace=False))


GOOD_BODY = "The billing API lives in the acme/billing-api repository and deploys from main every weekday."

RESET_RETRIEVAL = [
    f"DROP TABLE IF EXISTS {tables.VEC}",
    f"DELETE FROM {tables.CHUNKS}",
    f"DELETE FROM {tables.DIRTY}",
    f"DELETE FROM {tables.META}",
]

RESET_POSTGRES = [f"DELETE FROM {tables.DOCS}", f"DELETE FROM {tables.QUEUE}"]

# A private Django hook, not in the stubs.
_original_teardown = TransactionTestCase._fixture_teardown  # type: ignore[attr-defined]


def _teardown_with_audit_flush(self):
    """Transactional tests end with a flush (DELETE FROM every table). The
    write log refuses DELETE by design, so lift its triggers for the flush
    only, then put them back. Production code has no such path."""
    for alias in connections:
        with connections[alias].cursor() as cursor:
            for sql in database_engine(connections[alias]).audit_triggers()[1]:
                cursor.execute(sql)
    try:
        with _flush_keeping_django_rows():
            _original_teardown(self)
    finally:
        for alias in connections:
            postgres = connections[alias].vendor == "postgresql"
            with connections[alias].cursor() as cursor:
                for sql in database_engine(connections[alias]).audit_triggers()[0]:
                    cursor.execute(sql)
                # The retrieval tables are not Django models, so the flush
                # leaves them: reset them too (the FTS tables follow the
                # record table through their triggers; PostgreSQL's flush is
                # a TRUNCATE, which fires no row triggers, so its documents
                # and queue are emptied here).
                for sql in RESET_RETRIEVAL + (RESET_POSTGRES if postgres else []):
                    cursor.execute(sql)
        # The flush also empties reviews_space, which migration 0008 filled:
        # put back the three spaces every database starts with (no members).
        restore_default_spaces(alias)


# Rows a flush would delete only for Django's post-migrate handlers to make
# them again (content types and permissions: about 0.1 s of every
# transactional test's teardown); no test adds to them.
KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})
# The apps whose post-migrate handlers put back what a flush removes.
POST_FLUSH_APPS = ("reviews", "retrieval")


@contextmanager
def _flush_keeping_django_rows():
    """During a test's flush: every table but ``KEPT_BY_FLUSH`` emptied, and
    post_migrate sent for ``POST_FLUSH_APPS`` only (Django's own handlers,
    connected for every app, then find their rows in place)."""
    from django.apps import apps
    from django.core.management.commands import flush as flush_command
    from django.db.models.signals import post_migrate

    def sql_flush(style, connection, reset_sequences=True, allow_cascade=False):
        names = connection.introspection.django_table_names(only_existing=True, include_views=False)
        kept = [name for name in names if name not in KEPT_BY_FLUSH]
        return connection.ops.sql_flush(style, kept, reset_sequences=reset_sequences, allow_cascade=allow_cascade)

    def emit_post_migrate_signal(verbosity, interactive, db, **kwargs):
        for label in POST_FLUSH_APPS:
            config = apps.get_app_config(label)
            post_migrate.send(
                sender=config,
                app_config=config,
                verbosity=verbosity,
                interactive=interactive,
                using=db,
                **kwargs,
            )

    command = cast(Any, flush_command)  # the names it imported, not in the stubs
    saved = command.sql_flush, command.emit_post_migrate_signal
    command.sql_flush, command.emit_post_migrate_signal = sql_flush, emit_post_migrate_signal
    try:
        yield
    finally:
        command.sql_flush, command.emit_post_migrate_signal = saved


def restore_default_spaces(alias: str) -> None:
    from reviews.space_models import Space

    for slug, name in (("personal", "Personal"), ("team", "Team"), ("system", "System")):
        Space.objects.using(alias).get_or_create(slug=slug, defaults={"kind": slug, "name": name})


TransactionTestCase._fixture_teardown = _teardown_with_audit_flush  # type: ignore[attr-defined]


@pytest.fixture
def reviewer(django_user_model):
    """rita: the first reviewer, owner of the personal, team and system spaces (as after migration 0008)."""
    user = django_user_model.objects.create_superuser("rita", "rita@example.com", "a-long-password-1")
    actions.claim_unowned_spaces(user, actor=actions.SystemActor("tests"))
    return user


@pytest.fixture
def second_reviewer(django_user_model, reviewer):
    """sam: another staff account, a reviewer of the team and system spaces (never of rita's personal one)."""
    user = django_user_model.objects.create_superuser("sam", "sam@example.com", "a-long-password-2")
    for slug in ("team", "system"):
        actions.add_member(slug, user, role="reviewer", actor=actions.SystemActor("tests"))
    return user


@pytest.fixture
def agent(reviewer):
    created, _token = actions.create_agent(
        "claude-code", spaces=["personal", "team"], actor=reviewer, source_tool="claude-code"
    )
    return created


@pytest.fixture
def team_agent(reviewer):
    created, _token = actions.create_agent("team-bot", spaces=["team"], actor=reviewer)
    return created


def content(**overrides) -> dict[str, Any]:
    data = {
        "kind": "fact",
        "space": "team",
        "title": "Billing API repository",
        "body": GOOD_BODY,
        "tags": ["billing", "repos"],
    }
    data.update(overrides)
    return data


@pytest.fixture
def make_record(reviewer, agent):
    """Create an approved record through the real actions (propose + accept)."""

    def make(**overrides):
        proposal = actions.propose_create(agent=agent, reason="Seen in the repo README", **content(**overrides))
        return actions.accept_proposal(proposal, actor=reviewer).result_record

    return make


@pytest.fixture
def record(make_record):
    return make_record()


@pytest.fixture
def signed_in(client, reviewer):
    """The test client, signed in as the reviewer."""
    client.force_login(reviewer)
    return client


@pytest.fixture
def create_proposal(agent):
    """make(n, **overrides): a pending create from the agent, title "Proposal number N"."""

    def make(n=0, **overrides):
        fields = content(title=f"Proposal number {n}", body=f"{GOOD_BODY} Variant {n}.", **overrides)
        return actions.propose_create(agent=agent, reason="Seen in the repository", **fields)

    return make


# --------------------------------------------------------------------------- agent gateway


@pytest.fixture(scope="module")
def gateway(django_db_setup, django_db_blocker, tmp_path_factory):
    """The real daemon (`manage.py serve`) over the test database, one per
    test module. Tests using it need committed data: see ``agent_tokens``."""
    from tests.gateway_support import running_daemon

    with running_daemon(tmp_path_factory.mktemp("daemon")) as daemon:
        yield daemon


@pytest.fixture
def agent_tokens(transactional_db, reviewer, agent, team_agent):
    """Raw bearer tokens by agent name: claude-code (the ``agent`` fixture,
    personal+team), team-bot (``team_agent``, team) and gone (revoked).
    Committed, so the daemon sees them."""
    tokens = {name: actions.rotate_agent_token(name, actor=reviewer)[1] for name in ("claude-code", "team-bot")}
    _gone, tokens["gone"] = actions.create_agent("gone", spaces=["team"], actor=reviewer)
    actions.revoke_agent("gone", actor=reviewer)
    return tokens


# --------------------------------------------------------------------------- a migrated VETTED_HOME


@pytest.fixture(scope="session")
def migrated(tmp_path_factory):
    """A database `manage.py migrate` made once per session (per worker under
    pytest-xdist); ``migrated.home(folder)`` makes ``folder`` a VETTED_HOME
    with a copy of it and returns the environment of a process over it (on
    the PostgreSQL pass, a copy of a migrated database on the test server).
    For tests that start Vetted processes (slow): see tests/home_support.py."""
    from tests.home_support import make_template

    server = os.environ["VETTED_DATABASE_URL"] if POSTGRES else None
    return make_template(tmp_path_factory.mktemp("migrated"), postgres_server_url=server)
