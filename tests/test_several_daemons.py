"""Several daemons over one PostgreSQL database (issue 17): the state a
daemon used to keep in its own memory is shared or coherent across them.

Two "daemons" here are two connections (two threads, each with its own
Django connection, and each with its own in-process objects); the tests
that need real daemons start them and are marked slow.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test import override_settings

from mcp_bridge import agent_api
from reviews.errors import RateLimited

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="one SQLite file has one daemon (the serve lock)"
)


def in_thread(fn, *args):
    """Run ``fn`` on another thread, so on another database connection (as
    another daemon would), and return its result or raise its error."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # handed back to the caller
            out["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    if "error" in out:
        raise out["error"]
    return out.get("value")


# --------------------------------------------------------------------------- limits


@postgres_only
@pytest.mark.django_db(transaction=True)
@override_settings(VETTED_PROPOSALS_PER_MINUTE=4)
def test_an_agent_at_its_limit_on_one_daemon_is_at_it_on_the_other(agent, team_agent):
    daemon_a = agent_api.SlidingWindowLimiter("VETTED_PROPOSALS_PER_MINUTE", "send", "proposals")
    daemon_b = agent_api.SlidingWindowLimiter("VETTED_PROPOSALS_PER_MINUTE", "send", "proposals")
    assert daemon_a.shared()
    in_thread(daemon_a.hit, agent)
    in_thread(daemon_b.hit, agent)
    in_thread(daemon_a.hit, agent)
    in_thread(daemon_b.hit, agent)
    for daemon in (daemon_a, daemon_b):
        with pytest.raises(RateLimited) as refused:
            in_thread(daemon.hit, agent)
        assert 55 <= refused.value.retry_after <= 60
    in_thread(daemon_b.hit, team_agent)  # another agent has its own window


@postgres_only
@pytest.mark.django_db(transaction=True)
@override_settings(VETTED_READS_PER_MINUTE=30)
def test_two_daemons_racing_let_in_exactly_the_limit(agent):
    """Sixty calls at once from two daemons, thirty allowed: the advisory
    lock makes the count and the insert one step, so exactly thirty pass."""
    daemons = [agent_api.SlidingWindowLimiter("VETTED_READS_PER_MINUTE", "make", "reads") for _ in range(2)]
    allowed, refused = [], []
    start = threading.Barrier(6)

    def caller(limiter):
        start.wait()
        try:
            for _ in range(10):
                try:
                    limiter.hit(agent)
                    allowed.append(1)
                except RateLimited:
                    refused.append(1)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=caller, args=(daemons[i % 2],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert (len(allowed), len(refused)) == (30, 30)


@postgres_only
@pytest.mark.django_db(transaction=True)
@override_settings(VETTED_READS_PER_MINUTE=3)
def test_the_shared_window_frees_a_call_a_minute_after_it_and_prunes_old_marks(agent):
    from mcp_bridge.models import CallMark

    limiter = agent_api.SlidingWindowLimiter("VETTED_READS_PER_MINUTE", "make", "reads")
    for t in (0.0, 10.0, 20.0):
        limiter.hit(agent, now=1000 + t)
    with pytest.raises(RateLimited) as refused:
        limiter.hit(agent, now=1030.0)
    assert refused.value.retry_after == 30
    limiter.hit(agent, now=1060.5)  # the first call's minute is over
    assert sorted(CallMark.objects.values_list("at", flat=True)) == [1010.0, 1020.0, 1060.5]


# --------------------------------------------------------------------------- the notification sender


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_senders_racing_send_each_message_once(settings, agent):
    """Two daemons' senders pass at the same moment, round after round, each
    round after a new proposal: the receiver gets one message per round."""
    from datetime import timedelta

    from django.utils import timezone

    from notify import sender
    from notify.models import Delivery
    from reviews import actions
    from tests.conftest import content
    from tests.notify_support import Receiver

    receiver = Receiver().start()
    settings.VETTED_WEBHOOK_URL = receiver.url
    settings.VETTED_WEBHOOK_SECRET = "s3cret-for-tests"
    settings.VETTED_WEBHOOK_FORMAT = "json"
    settings.VETTED_NOTIFY_EMAIL = []
    settings.VETTED_NOTIFY_MIN_SECONDS = 0
    settings.VETTED_NOTIFY_QUIET_SECONDS = 0
    rounds = 8
    try:
        for n in range(rounds):
            actions.propose_create(
                agent=agent,
                reason="Seen in the repository",
                **content(
                    title=f"Race number {n}", body=f"Body {n}: the nightly deploy of service {n} reports to ops."
                ),
            )
            now = timezone.now() + timedelta(seconds=1)
            start = threading.Barrier(2)

            def one_pass(owner, start=start, now=now):
                start.wait()
                try:
                    sender.batch(now)
                    sender.send_due(now, owner=owner)
                finally:
                    connections.close_all()

            threads = [threading.Thread(target=one_pass, args=(f"daemon-{d}",)) for d in "ab"]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        ids = [item.headers["x-vetted-delivery"] for item in receiver.got]
        assert len(ids) == len(set(ids)) == Delivery.objects.count() == rounds
        assert sorted(item.json()["items"][0]["title"] for item in receiver.got) == [
            f"Race number {n}" for n in range(rounds)
        ]
    finally:
        receiver.stop()


# --------------------------------------------------------------------------- subscriptions


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_change_feed_finds_an_event_that_committed_after_a_newer_one(agent, team_agent):
    """Daemon B's proposal takes an audit id, daemon A's later one commits
    first and the feed reads past it; B's commit must still be heard."""
    from django.db import transaction

    from reviews import actions
    from reviews.models import AuditEvent
    from tests.conftest import content

    def propose(who, n):
        return actions.propose_create(
            agent=who,
            reason="Seen in the repository",
            **content(title=f"Late commit {n}", body=f"Body {n}: the nightly deploy of service {n} reports to ops."),
        )

    after = agent_api.newest_change_ids()
    seen = agent_api.seen_below(*after)
    holding, release = threading.Event(), threading.Event()
    slow: dict = {}

    def slow_daemon():
        try:
            with transaction.atomic():
                slow["proposal"] = propose(agent, 1)
                holding.set()
                release.wait(20)
        finally:
            connections.close_all()

    thread = threading.Thread(target=slow_daemon)
    thread.start()
    assert holding.wait(20)
    fast = propose(team_agent, 2)
    uris, audit_after, outbox_after = agent_api.changed_uris(*after, seen)
    late = slow["proposal"].public_id
    assert any(fast.public_id in uri for uri in uris) and not any(late in uri for uri in uris)
    release.set()
    thread.join(20)
    assert AuditEvent.objects.filter(pk__lte=audit_after, subject_id=late).exists()  # below the cursor
    uris, audit_after, outbox_after = agent_api.changed_uris(audit_after, outbox_after, seen)
    assert any(late in uri for uri in uris)
    assert agent_api.changed_uris(audit_after, outbox_after, seen)[0] == []  # each row told once


@pytest.mark.django_db
def test_the_change_feed_names_every_row_above_its_cursor_in_one_pass(agent, reviewer):
    """On both engines, with ``seen`` as the daemon passes it: the write log
    reads newest first, and a skip test on the running maximum once passed over
    every row below the newest (a decision went unheard, beside a retirement)."""
    from reviews import actions
    from tests.conftest import content

    proposals = [
        actions.propose_create(agent=agent, reason="Seen in the repository", **content(title=f"Feed row {n}"))
        for n in range(3)
    ]
    after = agent_api.newest_change_ids()
    seen = agent_api.seen_below(*after)
    for proposal in proposals:
        actions.reject_proposal(proposal.public_id, actor=reviewer, note="Not now.")
    uris, *_after = agent_api.changed_uris(*after, seen)
    assert {f"vetted://proposals/{p.public_id}" for p in proposals} <= set(uris)


# --------------------------------------------------------------------------- serve --workers


@pytest.mark.skipif(connection.vendor == "postgresql", reason="the refusal is SQLite's")
def test_serve_refuses_several_workers_on_sqlite_and_says_what_to_do():
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=r"--workers 2 needs PostgreSQL.*VETTED_DATABASE_URL.*--workers 1"):
        call_command("serve", "--workers", "2", "--port", "1")


def _worker_pids(parent: int) -> list[int]:
    from pathlib import Path

    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return [int(pid) for pid in children if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]


@postgres_only
@pytest.mark.slow
@pytest.mark.postgres_slow
def test_serve_with_two_workers_answers_from_each(tmp_path, agent_tokens):
    """Two worker processes on one port: with either one stopped, the other
    answers alone (so each serves), and an agent's limit is one across both."""
    import os
    import signal
    import time

    from tests.gateway_support import http, running_daemon

    token = agent_tokens["claude-code"]
    with running_daemon(tmp_path, args=("--workers", "2"), VETTED_READS_PER_MINUTE="6") as daemon:
        deadline = time.monotonic() + 60
        while len(workers := _worker_pids(daemon.process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(workers) == 2, daemon.log()[-2000:]
        statuses = []
        for stopped in workers:
            os.kill(stopped, signal.SIGSTOP)
            try:
                for _ in range(3):
                    status, _headers, _body = http("GET", daemon.base + "/api/v1/records", token=token)
                    statuses.append(status)
            finally:
                os.kill(stopped, signal.SIGCONT)
        assert statuses == [200] * 6
        status, _headers, _body = http("GET", daemon.base + "/api/v1/records", token=token)
        assert status == 429  # the seventh read in the minute, whichever worker took it


# --------------------------------------------------------------------------- two real daemons

MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@postgres_only
@pytest.mark.slow
@pytest.mark.postgres_slow
def test_two_daemons_on_one_database_see_each_others_writes_and_keep_sessions_their_own(
    tmp_path, agent_tokens, reviewer
):
    """Daemon A has searched (its vector copy and statistics are warm); a
    proposal made through daemon B and approved by the reviewer is found by
    A's next search. An MCP session opened on A is unknown on B (404, which
    makes a client open a new one: the proxy routes an agent to one daemon,
    docs/postgres.md, "Several daemons"), and B's new session works."""
    from reviews import actions
    from reviews.models import Proposal
    from tests.gateway_support import http, running_daemon

    token = agent_tokens["claude-code"]
    with running_daemon(tmp_path) as a, running_daemon(tmp_path) as b:
        status, _h, data = http("GET", a.base + "/api/v1/search?q=quasar+ledger+rotation", token=token)
        assert status == 200 and data["results"] == []
        status, _h, data = http(
            "POST",
            b.base + "/api/v1/proposals",
            token=token,
            body={
                "title": "Quasar ledger rotation",
                "kind": "fact",
                "space": "team",
                "reason": "Seen in the runbook.",
                "body": "The quasar ledger rotation runs every Sunday night and pages the on-call engineer.",
            },
        )
        assert status == 201, data
        actions.accept_proposal(Proposal.objects.get(public_id=data["proposal_id"]), actor=reviewer)
        status, _h, data = http("GET", a.base + "/api/v1/search?q=quasar+ledger+rotation", token=token)
        assert status == 200 and [r["title"] for r in data["results"]][:1] == ["Quasar ledger rotation"], data

        status, headers, _body = http("POST", a.base + "/mcp", token=token, body=MCP_INIT, headers=MCP_HEADERS)
        assert status == 200 and headers.get("mcp-session-id")
        session = {**MCP_HEADERS, "Mcp-Session-Id": headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert http("POST", a.base + "/mcp", token=token, body=ping, headers=session)[0] == 200
        assert http("POST", b.base + "/mcp", token=token, body=ping, headers=session)[0] == 404
        status, headers, _body = http("POST", b.base + "/mcp", token=token, body=MCP_INIT, headers=MCP_HEADERS)
        assert status == 200 and headers.get("mcp-session-id")


# --------------------------------------------------------------------------- the index queues


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_daemons_draining_the_vector_queue_at_once_embed_each_record_once(make_record):
    """Past each process's own lock (approved_content.writer_lock), two daemons drain one
    queue: no error (chunk rows are unique per record and place) and one set
    of chunks per record."""
    from retrieval import approved_content, index, tables
    from retrieval.embeddings import get_embedder

    records = [
        make_record(title=f"Queue race {n}", body=f"Body {n}: the nightly deploy of service {n}.") for n in range(40)
    ]
    approved_content.reconcile()
    # An accept may have embedded the records already (when an earlier test in
    # this process warmed the model): start from every chunk to embed, as a new
    # model does, so the two drains really race.
    with connection.cursor() as cursor:
        index._create_vec_table(cursor, get_embedder())
    assert index.pending_count() >= 40
    start = threading.Barrier(2)

    def drain():
        start.wait()
        return index._sync(get_embedder(), batch=8, progress=None)

    results: list = []
    errors: list = []

    def daemon():
        try:
            results.append(drain())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=daemon) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert index.pending_count() == 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT record_id, seq, count(*) FROM {tables.CHUNKS} GROUP BY record_id, seq HAVING count(*) > 1"
        )
        assert cursor.fetchall() == []
        cursor.execute(f"SELECT count(DISTINCT record_id) FROM {tables.CHUNKS}")
        assert cursor.fetchone()[0] == len(records)
    assert index.check().ok


# --------------------------------------------------------------------------- access counts


@pytest.mark.django_db(transaction=True)
def test_two_daemons_flushing_access_counts_lose_none(make_record):
    from retrieval.access import AccessCounter
    from reviews.models import Record

    ids = [make_record(title=f"Counted {n}", body=f"Body {n}: the nightly deploy of service {n}.").pk for n in range(6)]
    start = threading.Barrier(2)

    def daemon(order):
        counter = AccessCounter(flush_every=0)
        start.wait()
        try:
            for _ in range(25):
                counter.add(order)
            counter.flush()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=daemon, args=(o,)) for o in (ids, list(reversed(ids)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert list(Record.objects.filter(pk__in=ids).values_list("access_count", flat=True)) == [50] * 6


@pytest.mark.django_db
def test_an_access_count_flush_that_fails_keeps_its_counts(record, monkeypatch):
    from retrieval import tables
    from retrieval.access import AccessCounter

    counter = AccessCounter(flush_every=3600)
    counter.add([record.pk, record.pk])
    monkeypatch.setattr(tables, "RECORD_TABLE", "no_such_table")
    counter.flush()  # no error for the search that flushed
    monkeypatch.undo()
    counter.flush()
    record.refresh_from_db()
    assert record.access_count == 2
