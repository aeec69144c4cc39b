"""Several daemons (issue 17): a subscription crosses daemons, end to end.

Two real daemons on the test PostgreSQL. An agent's official MCP SDK client
subscribes on daemon A (``resources/subscribe`` on 2025-11-25, the listen
stream on 2026-07-28); the reviewer decides through daemon B's inbox forms
(a signed-in session and plain POSTs, as a browser would), so each decision
is made in B's process and A learns of it only through the database (the
write log its change feed polls). In the same pass the reviewer also
changes things in a space the agent was not granted; the agent hears
nothing of them.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import anyio
import pytest
from django.db import connection
from django.test import override_settings

from devtools.stress_reviewer import SiteSession
from reviews import actions
from tests.conftest import content
from tests.gateway_support import running_daemon
from tests.mcp_client import NEW_FACT, over_http

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres_slow,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="one SQLite file has one daemon (the serve lock)"),
]

PASSWORD = "a-long-password-1"
MODES = {
    # mode: what the reviewer does with the agent's proposal, and that proposal
    "legacy": ("reject", NEW_FACT),
    "2026-07-28": (
        "accept",
        {
            **NEW_FACT,
            "title": "Warehouse scanner firmware",
            "body": "Warehouse barcode scanners take firmware updates only from the depot laptop in bay four.",
            "tags": ["warehouse"],
        },
    ),
}


def _elsewhere(agent, reviewer, make_record, n: int) -> tuple[str, str]:
    """A record and another agent's pending proposal in the personal space,
    which team-bot was not granted."""
    record = make_record(space="personal", title=f"Rita prefers short answers, note {n}")
    proposal = actions.propose_create(
        agent=agent,
        reason="Said in a private session",
        **content(
            space="personal", title=f"Rita's private reminder {n}", body=f"Rita's dentist visit {n} is on Friday."
        ),
    )
    return record.public_id, proposal.public_id


def _through_b(site, personal_record: str, personal_proposal: str, decision: str, proposal_id: str) -> None:
    """The reviewer's decisions, all through daemon B's inbox: first the two
    in the space team-bot cannot see, then team-bot's own proposal."""
    for path, fields in (
        (f"/records/{personal_record}/retire", {"note": "No longer true."}),
        (f"/proposals/{personal_proposal}/reject", {"note": "Kept private."}),
    ):
        status, _page = site._post(path, {"csrfmiddlewaretoken": site.csrf, **fields})
        assert status in (200, 302), (path, status)
    if decision == "reject":
        status, _page = site._post(
            f"/proposals/{proposal_id}/reject",
            {"csrfmiddlewaretoken": site.csrf, "note": "We deploy on Wednesdays now."},
        )
    else:
        status = site.decide(proposal_id, "accept")
    assert status in (200, 302), (proposal_id, status)


def test_a_decision_through_daemon_b_reaches_a_subscriber_on_daemon_a_and_nothing_outside_its_spaces(
    tmp_path, agent_tokens, reviewer, agent, make_record
):
    elsewhere = {mode: _elsewhere(agent, reviewer, make_record, n) for n, mode in enumerate(MODES)}
    token = agent_tokens["team-bot"]  # granted "team" only
    heard: dict[str, list[tuple[str, dict]]] = {mode: [] for mode in MODES}
    mine: dict[str, str] = {}

    # The daemons check passwords with the production hashers, not the test settings' MD5.
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.PBKDF2PasswordHasher"]):
        reviewer.set_password(PASSWORD)
        reviewer.save(update_fields=["password"])
    with running_daemon(tmp_path) as a, running_daemon(tmp_path) as b:
        site = SiteSession(SimpleNamespace(url=b.base, reviewer=reviewer.username, password=PASSWORD))

        def steps_for(mode: str):
            decision, fact = MODES[mode]
            personal_record, personal_proposal = elsewhere[mode]

            async def on_message(message):
                root = getattr(message, "root", message)
                if getattr(root, "method", "") == "notifications/resources/updated":
                    heard[mode].append((str(root.params.uri), root.params.meta or {}))

            async def steps(c):
                done = await c.call_tool("propose_context", fact)
                assert done.structured_content and "proposal_id" in done.structured_content, done
                pid = done.structured_content["proposal_id"]
                mine[mode] = f"vetted://proposals/{pid}"
                uris = [
                    mine[mode],
                    f"vetted://records/{personal_record}",
                    f"vetted://proposals/{personal_proposal}",
                ]
                decide = (site, personal_record, personal_proposal, decision, pid)
                if mode == "legacy":
                    for uri in uris:
                        await c.session.subscribe_resource(uri)
                    await asyncio.to_thread(_through_b, *decide)
                    with anyio.move_on_after(10):
                        while not heard[mode]:
                            await asyncio.sleep(0.1)
                    await asyncio.sleep(1.5)  # anything more would come within a poll
                    return
                async with c.listen(resource_subscriptions=uris) as sub:
                    await asyncio.to_thread(_through_b, *decide)
                    with anyio.move_on_after(10):
                        async for event in sub:
                            heard[mode].append((str(event.uri), {}))
                            break
                    with anyio.move_on_after(1.5):  # anything more would come within a poll
                        async for event in sub:
                            heard[mode].append((str(event.uri), {}))

            return steps, (on_message if mode == "legacy" else None)

        for mode in MODES:
            steps, on_message = steps_for(mode)
            over_http(a.mcp_url, token, steps, mode, on_message)

        logs = {"a": a.log(), "b": b.log()}

    # Every decision was made in daemon B's process (its log has the audit line), none in A's.
    made = [
        f"proposal.{'rejected' if MODES[m][0] == 'reject' else 'accepted'} actor=user:rita subject=proposal:"
        + mine[m].rsplit("/", 1)[1]
        for m in MODES
    ]
    for personal_record, personal_proposal in elsewhere.values():
        made += [
            f"record.retired actor=user:rita subject=record:{personal_record}",
            f"proposal.rejected actor=user:rita subject=proposal:{personal_proposal}",
        ]
    assert all(line in logs["b"] and line not in logs["a"] for line in made), made
    # Each client heard its own proposal's decision, once, and nothing of the personal space.
    assert [uri for uri, _meta in heard["legacy"]] == [mine["legacy"]], logs["a"][-2000:]
    assert [uri for uri, _meta in heard["2026-07-28"]] == [mine["2026-07-28"]], logs["a"][-2000:]
    told = heard["legacy"][0][1]
    assert told["vetted/state"] == "rejected" and told["vetted/decision_note"] == "We deploy on Wednesdays now."
