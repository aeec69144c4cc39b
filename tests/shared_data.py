"""Rows built once for a class (or module) of tests, rolled back at its end.

Building the same people, agents and records for every test was most of
these modules' cost: one record through the real actions (propose, then
accept) is 30-80 ms, and a fixture of a dozen made each test's setup
250-500 ms. A fixture built here makes them once, inside an outer
transaction that is rolled back when its class or module ends; each test
still runs inside its own savepoint (pytest-django's ``db``), so what a test
writes is gone before the next one starts.

Two things a shared build must not leak from one test into the next:

- model instances: an action may change the instance it was given (the
  proposal an accept decided), and a lazily loaded relation stays cached on
  it. ``fresh`` hands each test its own copies, read again from the database.
- the in-memory vector snapshots (retrieval/vectors.py): a snapshot follows
  changes by the tokens in retrieval_meta, and after a rollback the tokens are
  the shared build's again while the snapshot may still hold the chunks a
  rolled-back test added (same base, other token: it only appends). This
  bites once the build itself made the vector table (a search in it): tried
  so, the next test's snapshot held 12 rows where its database had 8. The
  builds here make none, so each test's first search makes the table afresh
  (a new base: a full reload); still, each test over shared rows starts with
  no snapshot (``for_a_test``), so a build that searches stays safe.

The people and agents are made as the conftest's ``reviewer``, ``agent`` and
``team_agent`` fixtures make them; a class (or module) over shared rows
overrides those names with ``fresh`` copies of its own, since the conftest's
would create "rita" or "claude-code" a second time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import models, transaction

from reviews import actions
from reviews.models import Agent
from tests.conftest import GOOD_BODY, content


@contextmanager
def rolled_back(django_db_blocker) -> Iterator[None]:
    """Database access outside a test, in a transaction rolled back at the end."""
    with django_db_blocker.unblock(), transaction.atomic():
        try:
            yield
        finally:
            transaction.set_rollback(True)


def fresh(value: Any) -> Any:
    """``value`` with every model instance in it read again from the database
    (dicts, lists and tuples are copied; anything else is returned as is)."""
    if isinstance(value, models.Model):
        return type(value)._default_manager.get(pk=value.pk)
    if isinstance(value, dict):
        return {key: fresh(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(fresh(item) for item in value)
    return value


def for_a_test(value: Any) -> Any:
    """What a test over shared rows starts from: its own copies of ``value``
    and no vector snapshot an earlier test left behind."""
    forget_vector_snapshots()
    return fresh(value)


def forget_vector_snapshots() -> None:
    from retrieval import vectors

    vectors.cache.forget()


@dataclass
class People:
    """rita, claude-code (personal + team) and team-bot (team), as the conftest makes them."""

    reviewer: Any
    agent: Agent
    team_agent: Agent

    def make_record(self, **overrides: Any):
        """An approved record, as the conftest's ``make_record`` makes one (propose, then accept)."""
        proposal = actions.propose_create(agent=self.agent, reason="Seen in the repo README", **content(**overrides))
        return actions.accept_proposal(proposal, actor=self.reviewer).result_record

    def create_proposal(self, n: int = 0, **overrides: Any):
        """A pending create from claude-code, as the conftest's ``create_proposal`` makes one."""
        fields = content(title=f"Proposal number {n}", body=f"{GOOD_BODY} Variant {n}.", **overrides)
        return actions.propose_create(agent=self.agent, reason="Seen in the repository", **fields)


def make_reviewer():
    """rita, owner of the personal, team and system spaces (the conftest's ``reviewer``)."""
    reviewer = get_user_model().objects.create_superuser("rita", "rita@example.com", "a-long-password-1")
    actions.claim_unowned_spaces(reviewer, actor=actions.SystemActor("tests"))
    return reviewer


def make_people() -> People:
    reviewer = make_reviewer()
    agent, _token = actions.create_agent(
        "claude-code", spaces=["personal", "team"], actor=reviewer, source_tool="claude-code"
    )
    team_agent, _token = actions.create_agent("team-bot", spaces=["team"], actor=reviewer)
    return People(reviewer, agent, team_agent)


def shared(build: Callable[[], Any], django_db_blocker) -> Iterator[Any]:
    """The body of a class- or module-scoped fixture: ``build()`` once, rolled back at the end."""
    with rolled_back(django_db_blocker):
        yield build()
    forget_vector_snapshots()
