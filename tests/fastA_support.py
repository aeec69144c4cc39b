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
from django.contrib.auth import get_user_model
from django.db import transaction

from retrieval import index
from retrieval.embeddings import get_embedder
from reviews import actions
from reviews.models import Record
from tests.conftest import content


@dataclass
class Cast:
    """The conftest's people, made once: rita (reviewer, owner of the three
    spaces), claude-code (personal + team) and team-bot (team)."""

    reviewer: Any
    agent: Any
    team_agent: Any
    data: Any = field(default=None)

    def make_record(self, **overrides) -> Record:
        """As the conftest's ``make_record``: claude-code proposes, rita accepts."""
        proposal = actions.propose_create(agent=self.agent, reason="Seen in the repo README", **content(**overrides))
        record = actions.accept_proposal(proposal, actor=self.reviewer).result_record
        assert record is not None
        return record


def make_cast() -> Cast:
    reviewer = get_user_model().objects.create_superuser("rita", "rita@example.com", "a-long-password-1")
    actions.claim_unowned_spaces(reviewer, actor=actions.SystemActor("tests"))
    agent, _token = actions.create_agent(
        "claude-code", spaces=["personal", "team"], actor=reviewer, source_tool="claude-code"
    )
    team_agent, _token = actions.create_agent("team-bot", spaces=["team"], actor=reviewer)
    return Cast(reviewer, agent, team_agent)


@contextmanager
def shared_data(django_db_blocker, build: Callable[[Cast], Any]) -> Iterator[Cast]:
    """The cast with ``cast.data = build(cast)``, in a transaction rolled back
    at the end. The index queue is drained here once (what each test's first
    semantic search would otherwise do again in its own savepoint)."""
    with django_db_blocker.unblock(), transaction.atomic():
        try:
            cast = make_cast()
            cast.data = build(cast)
            index.sync(get_embedder())
            yield cast
        finally:
            transaction.set_rollback(True)


class OverSharedData:
    """Mixin for a test class whose tests share ``shared`` (a class-scoped
    fixture the class defines): the people fixtures answer with its cast."""

    @pytest.fixture
    def reviewer(self, shared):
        return shared.reviewer

    @pytest.fixture
    def agent(self, shared):
        return shared.agent

    @pytest.fixture
    def team_agent(self, shared):
        return shared.team_agent

    @pytest.fixture
    def make_record(self, shared):
        return shared.make_record
