"""Concurrent actions on a real SQLite file: one winner, no lost writes, no lock errors."""

import threading

import pytest
from django.db import connections

from reviews import actions
from reviews.errors import InvalidTransition
from reviews.models import AuditEvent, Proposal, Record
from tests.conftest import content

pytestmark = pytest.mark.django_db(transaction=True)


def run_in_threads(fns):
    results: list[tuple | None] = [None] * len(fns)
    barrier = threading.Barrier(len(fns))

    def worker(i, fn):
        try:
            barrier.wait()
            results[i] = ("ok", fn())
        except Exception as exc:  # noqa: BLE001 - the test inspects what happened
            results[i] = ("error", exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def test_two_reviewers_accepting_at_once_one_wins(agent, reviewer, second_reviewer):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    results = run_in_threads(
        [
            lambda: actions.accept_proposal(proposal.public_id, actor=reviewer),
            lambda: actions.reject_proposal(proposal.public_id, actor=second_reviewer, note="no"),
        ]
    )
    outcomes = sorted(kind for kind, _ in results)
    assert outcomes == ["error", "ok"], results
    error = next(value for kind, value in results if kind == "error")
    assert isinstance(error, InvalidTransition) and "already" in error.message
    assert AuditEvent.objects.filter(event_type__in=["proposal.accepted", "proposal.rejected"]).count() == 1
    assert Record.objects.count() == (1 if Proposal.objects.get().state == "accepted" else 0)


def test_parallel_proposals_are_all_stored_once(agent, reviewer):
    n = 12
    results = run_in_threads(
        [
            (
                lambda i=i: actions.propose_create(
                    agent=agent, reason="Parallel write", **content(title=f"Parallel note number {i}")
                )
            )
            for i in range(n)
        ]
    )
    assert all(kind == "ok" for kind, _ in results), results
    assert Proposal.objects.count() == n
    assert AuditEvent.objects.filter(event_type="proposal.created").count() == n


def test_dispute_and_accept_of_a_revision_race_safely(agent, team_agent, reviewer, record):
    revision = actions.propose_revision(record, agent=agent, reason="Renamed", title="Billing API repo")
    results = run_in_threads(
        [
            lambda: actions.accept_proposal(revision.public_id, actor=reviewer),
            lambda: actions.dispute_record(record.public_id, agent=team_agent, reason="It moved again"),
        ]
    )
    # Whatever the order, at most one approved version of the content exists,
    # and a dispute never lands on a superseded record.
    record.refresh_from_db()
    live = Record.objects.filter(status__in=["approved", "disputed"])
    assert live.count() == 1
    if record.status == "superseded":
        assert not Proposal.objects.filter(target=record, action="dispute", state="pending").exists()
    assert all(kind == "ok" or isinstance(value, InvalidTransition) for kind, value in results), results
