"""The actions' row locks on PostgreSQL (issue 17, several daemons).

Agents and records are locked ``FOR NO KEY UPDATE`` (``select_for_update(
no_key=True)``, reviews/actions/_common.py): it serialises the actions on a
row, but lets through another transaction's foreign-key check on that row,
which Django's deferred constraints run at COMMIT as ``FOR KEY SHARE``.
With a plain ``FOR UPDATE`` that check waits for the lock holder, and under
``stress --daemons 2`` two such waits crossed (a deadlock). Here one
transaction holds the lock (through the real helper or action) and another,
on its own connection, commits a row that references the locked row under
a short ``lock_timeout``: it must commit at once. SQLite has no row locks
(one writer at a time, BEGIN IMMEDIATE), so these run on PostgreSQL only.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection, connections, transaction

from retrieval import index, tables, vectors
from retrieval.embeddings import get_embedder
from reviews import actions
from reviews.actions._common import locked_agent, locked_record
from reviews.models import Proposal, ProposalAction
from tests.conftest import content

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks are PostgreSQL's (SQLite: one writer)"),
    pytest.mark.django_db(transaction=True),
]


def _hold(take, held: threading.Event, release: threading.Event, errors: list) -> None:
    """In a transaction of this thread's own connection: ``take()`` the lock,
    say so, keep it until released, then roll back."""
    try:
        with transaction.atomic():
            take()
            held.set()
            release.wait(10)
            transaction.set_rollback(True)
    except BaseException as exc:  # handed back to the test
        errors.append(exc)
        held.set()
    finally:
        connections.close_all()


def _commit_a_row_referencing(agent, record) -> None:
    """Another daemon's write: a new proposal naming the agent and the record,
    committed under a lock_timeout far below any real wait."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '300ms'")
        Proposal.objects.create(action=ProposalAction.RETIRE, agent=agent, target=record, reason="Another daemon.")


def _propose_holding_the_agent(agent):
    # The agent lock every proposal action takes (reviews/actions/proposals.py).
    actions.propose_create(agent=agent, reason="Seen in the repository", **content(title="Held open"))


@pytest.mark.parametrize(
    "lock",
    [
        pytest.param(lambda agent, record: locked_agent(agent), id="locked_agent"),
        pytest.param(lambda agent, record: _propose_holding_the_agent(agent), id="a proposal's agent lock"),
        pytest.param(lambda agent, record: locked_record(record), id="locked_record"),
    ],
)
def test_a_held_action_lock_lets_another_transactions_foreign_key_check_commit(lock, agent, team_agent, record):
    held, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    holder = threading.Thread(target=_hold, args=(lambda: lock(agent, record), held, release, errors))
    holder.start()
    try:
        assert held.wait(10) and not errors, errors
        try:
            _commit_a_row_referencing(agent, record)
        except OperationalError as exc:  # a plain FOR UPDATE: the key check waited and timed out
            pytest.fail(f"the foreign-key check waited for the action's lock: {exc}")
    finally:
        release.set()
        holder.join(10)
    assert not errors, errors
    assert Proposal.objects.filter(reason="Another daemon.", agent=agent, target=record).exists()


def test_the_held_lock_still_serialises_the_actions_on_that_agent(agent, record):
    """The other half of the promise: an action on the same agent waits."""
    held, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    holder = threading.Thread(target=_hold, args=(lambda: locked_agent(agent), held, release, errors))
    holder.start()
    try:
        assert held.wait(10) and not errors, errors
        with pytest.raises(OperationalError, match="lock timeout"):
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '300ms'")
                _propose_holding_the_agent(agent)
    finally:
        release.set()
        holder.join(10)
    assert not errors, errors


def test_a_vector_sync_waits_for_another_writer_of_its_space_before_it_takes_a_chunk_id(make_record):
    """The in-memory vector snapshots append chunks by id (retrieval/vectors.py),
    so a space's chunks must commit in id order. With two daemons, one sync
    could take id 100, another 101 and commit first: a search between the two
    commits read 101, and 100 was never appended. A sync now takes its spaces'
    token rows before any chunk row: here another writer holds the row and
    takes an id after the sync has started, and the sync's ids come later."""
    record = make_record(title="Pager rotation", body="The pager rotation changes every Monday at ten.")
    with connection.cursor() as cursor:  # its chunks gone and queued again: the sync inserts new rows
        cursor.execute(
            f"DELETE FROM {tables.VEC} WHERE rowid IN (SELECT id FROM {tables.CHUNKS} WHERE record_id = %s)",
            [record.pk],
        )
        cursor.execute(f"DELETE FROM {tables.CHUNKS} WHERE record_id = %s", [record.pk])
        cursor.execute(
            f"INSERT INTO {tables.DIRTY} (record_id) VALUES (%s) ON CONFLICT (record_id) DO NOTHING", [record.pk]
        )
    held, started = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    taken: list[int] = []

    def other_writer() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                vectors.renew_tokens(cursor, [record.space], base=False)
                held.set()
                started.wait(10)
                time.sleep(0.5)  # the sync is inside its transaction by now
                cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{tables.CHUNKS}', 'id'))")
                taken.append(cursor.fetchone()[0])
        except BaseException as exc:  # handed back to the test
            errors.append(exc)
            held.set()
        finally:
            connections.close_all()

    writer = threading.Thread(target=other_writer)
    writer.start()
    try:
        assert held.wait(10) and not errors, errors
        started.set()
        index.sync(get_embedder())
    finally:
        started.set()
        writer.join(10)
    assert not errors, errors
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id) FROM {tables.CHUNKS} WHERE record_id = %s", [record.pk])
        first = cursor.fetchone()[0]
    assert first is not None and first > taken[0], (
        f"the sync took chunk id {first} before the other writer's {taken[0]}"
    )
