"""Data made once per test class, for tests that only read it.

The conftest's ``make_record`` runs the real propose + accept (30-80 ms a
record, most of it the duplicate check and the ORM), and a function-scoped
data fixture pays that again for every test and every parameter. A class
that subclasses ``OverSharedData`` and defines a class-scoped ``shared``
fixture (``with shared_data(django_db_blocker, build) as data: yield data``)
makes its records once, through the same actions, inside a transaction
rolled back when the class ends; each test still runs in a savepoint of its
own on top of it (pytest-django's ``db``), so what a test writes is gone
before the next one starts.

Each such class carries its own ``xdist_group`` mark: under `--dist
loadgroup` (the Makefile's fast run) its tests go to one worker, so the data
is made once per run rather than once on each worker the class is split over.

Inside such a class ``reviewer``, ``agent``, ``team_agent`` and
``make_record`` are the shared cast's: the conftest's would make "rita",
"claude-code" and "team-bot" a second time (their names are unique). The
retrieval index (chunks, vectors, keyword tables) is written in the same
transaction, so it rolls back with the records; the vector cache follows
random tokens written in that transaction (retrieval/vectors.py), so a
rolled-back index never looks current to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import transaction

from mcp_bridge.agent_api import limits
from retrieval import index
from retrieval import search as search_module
from retrieval.embeddings import get_embedder
from reviews import actions
from tests.shared_data import People, forget_vector_snapshots, fresh, make_reviewer


@dataclass
class Cast(People):
    """The conftest's people, made once (tests/shared_data.py), and what the
    class built over them (``data``). team-bot is None in a class whose tests
    never had it."""

    data: Any = field(default=None)


def make_cast(*, team_agent: bool = True) -> Cast:
    """rita and claude-code, and team-bot unless ``team_agent`` is False."""
    reviewer = make_reviewer()
    agent, _token = actions.create_agent(
        "claude-code", spaces=["personal", "team"], actor=reviewer, source_tool="claude-code"
    )
    bot = actions.create_agent("team-bot", spaces=["team"], actor=reviewer)[0] if team_agent else None
    return Cast(reviewer, agent, bot)


@contextmanager
def shared_data(django_db_blocker, build: Callable[[Cast], Any], *, team_agent: bool = True) -> Iterator[Cast]:
    """The cast with ``cast.data = build(cast)``, in a transaction rolled back
    at the end. The index queue is drained here once (what each test's first
    semantic search would otherwise do again in its own savepoint).

    A search while building counts accesses and fills the idf cache, both
    process-wide: they get a throwaway counter and cache here, as each test
    gets its own (the modules' autouse fixtures), so nothing of the rolled-back
    data reaches a later test's flush or ranking."""
    with django_db_blocker.unblock(), transaction.atomic():
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(search_module, "access_counter", search_module._AccessCounter(flush_every=3600))
                patch.setattr(search_module, "_docfreq", search_module._DocFreq())
                cast = make_cast(team_agent=team_agent)
                cast.data = build(cast)
                index.sync(get_embedder())
            yield cast
        finally:
            transaction.set_rollback(True)


def _forget_windows(agents: list[Any]) -> None:
    for limiter in (limits.write_limiter, limits.read_limiter, limits.initialize_limiter):
        with limiter._lock:
            for agent in agents:
                limiter._calls.pop(agent.public_id, None)
                limiter._refusing.pop(agent.token_digest or "", None)


class OverSharedData:
    """Mixin for a test class whose tests share ``shared`` (a class-scoped
    fixture the class defines): the people fixtures answer with its cast,
    read again for each test (see ``fresh``)."""

    @pytest.fixture(autouse=True)
    def _own_rate_windows(self, shared):
        """On SQLite an agent's rate windows are in this process's memory, by
        its public id: the conftest gave each test a new claude-code (a new
        id, empty windows), the shared one would carry one test's reads into
        the next (26 moments of read and list, after the tests before them,
        reached the 60 reads in 6 s). Each test starts with its agents'
        windows empty and leaves them so. (On PostgreSQL they are rows,
        rolled back with the test's savepoint.)"""
        agents = [agent for agent in (shared.agent, shared.team_agent) if agent is not None]
        _forget_windows(agents)
        forget_vector_snapshots()  # no snapshot of rows an earlier test's savepoint rolled back
        yield
        _forget_windows(agents)

    @pytest.fixture
    def reviewer(self, shared):
        return fresh(shared.reviewer)

    @pytest.fixture
    def agent(self, shared):
        return fresh(shared.agent)

    @pytest.fixture
    def team_agent(self, shared):
        return fresh(shared.team_agent)

    @pytest.fixture
    def make_record(self, shared):
        return Cast(fresh(shared.reviewer), fresh(shared.agent), None).make_record
