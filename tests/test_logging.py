"""What the server logs: decisions with their actor and ids, agent auth
failures (which check, the address, at most the token's public prefix),
rate limiting and index syncs, at INFO; never a token, title, body, reason
or note."""

from __future__ import annotations

import asyncio
import logging

import pytest
from django.test import override_settings

from mcp_bridge import agent_api
from mcp_bridge.mcp.guard import require_agent_token
from retrieval import index
from retrieval.embeddings import get_embedder
from reviews import actions
from reviews.errors import RateLimited
from tests.conftest import GOOD_BODY, content

pytestmark = pytest.mark.django_db

TITLE = "Billing API repository"
REASON = "Seen in the repository README today"
NOTE = "Matches the runbook we keep"


def lines(caplog) -> list[str]:
    return [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records]


def assert_no_secrets(text: str, *secrets: str) -> None:
    for secret in (TITLE, GOOD_BODY, REASON, NOTE, *secrets):
        assert secret not in text, secret


def test_a_decision_is_logged_with_the_actor_and_ids_after_commit(
    caplog, agent, reviewer, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.INFO)
    with django_capture_on_commit_callbacks(execute=True):
        proposal = actions.propose_create(agent=agent, reason=REASON, **content())
    with django_capture_on_commit_callbacks(execute=True):
        accepted = actions.accept_proposal(proposal, actor=reviewer, note=NOTE)
    text = "\n".join(lines(caplog))
    record_id = accepted.result_record.public_id
    assert (
        f"INFO reviews.actions: proposal.created actor=agent:claude-code subject=proposal:{proposal.public_id}" in text
    )
    assert (
        f"INFO reviews.actions: proposal.accepted actor=user:rita subject=proposal:{proposal.public_id} "
        f"record={record_id} action=create"
    ) in text
    assert_no_secrets(text)


def test_a_change_that_is_rolled_back_is_not_logged(caplog, agent, django_capture_on_commit_callbacks):
    caplog.set_level(logging.INFO)
    from django.db import transaction

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        actions.propose_create(agent=agent, reason=REASON, **content())
        raise RuntimeError("the caller fails after the action")
    assert "proposal.created" not in "\n".join(lines(caplog))


def test_a_refused_rest_call_is_logged_with_the_failure_and_address_never_the_token(caplog, client, agent, reviewer):
    caplog.set_level(logging.INFO)
    unknown = "vt_" + "Q" * 43
    assert (
        client.get("/api/v1/describe", HTTP_AUTHORIZATION=f"Bearer {unknown}", REMOTE_ADDR="10.1.2.3").status_code
        == 401
    )
    assert client.get("/api/v1/describe", HTTP_AUTHORIZATION="Bearer sk-live-abcdefghijkl").status_code == 401
    _agent, token = actions.create_agent("gone", spaces=["team"], actor=reviewer)
    actions.revoke_agent("gone", actor=reviewer)
    assert client.get("/api/v1/describe", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
    text = "\n".join(lines(caplog))
    assert (
        f"INFO reviews.actions.agents: agent auth failed: unknown via=rest address=10.1.2.3 token_start={unknown[3:10]}"
    ) in text
    assert "agent auth failed: malformed via=rest address=127.0.0.1 length=20" in text
    assert f"agent auth failed: revoked via=rest address=127.0.0.1 agent=gone ({_agent.public_id})" in text
    assert_no_secrets(text, unknown, unknown[:11], "sk-live", token, token[10:])


def test_a_refused_mcp_request_is_logged_with_the_clients_address(caplog, transactional_db):
    caplog.set_level(logging.INFO)
    sent = []

    async def app(scope, receive, send):  # never reached
        raise AssertionError("the guard let it through")

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "client": ("192.0.2.7", 50000), "headers": []}
    asyncio.run(require_agent_token(app)(scope, None, send))
    assert sent[0]["status"] == 401
    assert "agent auth failed: missing via=mcp address=192.0.2.7" in "\n".join(lines(caplog))


def test_rate_limiting_is_logged_once_per_spell_with_the_agent_and_the_limit(caplog, agent):
    caplog.set_level(logging.INFO)
    limiter = agent_api.SlidingWindowLimiter("VETTED_PROPOSALS_PER_MINUTE", "send", "proposals")
    with override_settings(VETTED_PROPOSALS_PER_MINUTE=1):
        limiter.hit(agent, now=100.0)
        for now in (130.0, 131.0, 140.0):  # one spell of refusals: one line
            with pytest.raises(RateLimited):
                limiter.hit(agent, now=now)
        limiter.hit(agent, now=161.0)
        with pytest.raises(RateLimited):  # a new spell
            limiter.hit(agent, now=170.0)
    refused = [line for line in lines(caplog) if "rate limited" in line]
    assert refused == [
        f"INFO mcp_bridge.agent_api.limits: rate limited: agent=claude-code ({agent.public_id}) "
        f"limit=VETTED_PROPOSALS_PER_MINUTE 1 proposals per minute retry_after={s}s"
        for s in (30, 51)
    ]


def test_an_index_sync_is_logged_with_counts_and_time(caplog, make_record):
    index.sync(get_embedder())  # drain what the fixtures queued
    make_record(title="Deploy window", body="The payments service deploys every Tuesday at 14:00 UTC.")
    caplog.set_level(logging.INFO)
    index.sync(get_embedder())
    found = [line for line in lines(caplog) if "index sync:" in line]
    # Two chunk rows for one record: its text, and its body alone (the body-only vector).
    assert len(found) == 1 and found[0].startswith(
        "INFO retrieval.index: index sync: 1 record(s), 2 chunk(s) embedded, 0 reused, 0 removed, 0 skipped in "
    )
    assert "Deploy window" not in found[0] and "Tuesday" not in found[0]
    caplog.clear()
    index.sync(get_embedder())  # nothing queued: nothing to say
    assert not [line for line in lines(caplog) if "index sync:" in line]
