"""MCP over streamable HTTP: the official client against the real daemon.

The test process plays the reviewer (reviews.actions); agents only ever
talk to the daemon at /mcp with their bearer token.
"""

from __future__ import annotations

import asyncio

import pytest

from reviews import actions
from reviews.models import Agent, Proposal, ProposalState, Record
from tests.gateway_support import http, running_daemon
from tests.mcp_client import NEW_FACT, call, over_http, text_of, tool_names

pytestmark = pytest.mark.slow

# withdraw_proposal is here although it ends a proposal: it decides nothing. It
# only takes back the calling agent's own pending proposal (another agent's is
# a 404), which the agent could equally have never sent.
SAFE_TOOLS = {
    "describe",
    "search",
    "read",
    "list",
    "propose_context",
    "propose_retirement",
    "dispute",
    "proposal_status",
    "quality_check",
    "withdraw_proposal",
}
FORBIDDEN_WORDS = (
    "approve",
    "accept",
    "reject",
    "edit",
    "update",
    "delete",
    "remove",
    "verify",
    "write",
    "set_",
    "clear",
    "revoke",
    "admin",
)


def structured(result) -> dict:
    assert not result.is_error, text_of(result)
    return result.structured_content


def propose(gateway, token, **overrides):
    return call(gateway.mcp_url, token, "propose_context", {**NEW_FACT, **overrides})


def test_agent_has_only_read_and_propose_tools(gateway, agent_tokens):
    names = set(tool_names(gateway.mcp_url, agent_tokens["claude-code"]))
    assert names == SAFE_TOOLS
    for name in names:
        if name.startswith("propose_") or name in ("dispute", "proposal_status", "withdraw_proposal"):
            continue
        assert not any(word in name for word in FORBIDDEN_WORDS), name


def test_tool_descriptions_say_when_to_call_and_give_an_example(gateway, agent_tokens):
    async def tools(client):
        return (await client.list_tools()).tools

    for tool in over_http(gateway.mcp_url, agent_tokens["claude-code"], tools):
        assert "Example:" in tool.description, tool.name
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        assert "agent" not in tool.input_schema.get("properties", {})  # identity comes from the token


def test_describe_reports_vocabulary_rules_and_the_callers_spaces(gateway, agent_tokens, make_record):
    make_record(tags=["billing", "repos"])
    data = structured(call(gateway.mcp_url, agent_tokens["claude-code"], "describe"))
    assert data["agent"]["name"] == "claude-code" and data["agent"]["spaces"] == ["personal", "team"]
    assert ("team", 1) in [(s["slug"], s["records"]) for s in data["spaces"]]
    assert {k["name"] for k in data["kinds"]} >= {"fact", "procedure", "decision"}
    assert {"name": "billing", "records": 1} in data["tags"]
    assert "reason" in data["write_rules"] and "60 proposals per minute" in data["write_rules"]["rate_limit"]
    assert data["pending_proposals"] == {"yours": 0}


def test_proposal_is_pending_until_the_reviewer_accepts_then_search_finds_it(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    answer = structured(propose(gateway, token))
    assert answer["status"] == "pending" and answer["proposal_id"].startswith("prop_")

    found = structured(call(gateway.mcp_url, token, "search", {"query": "payments deploy window Tuesday"}))
    assert found["results"] == []  # pending is never searchable

    proposal = Proposal.objects.get(public_id=answer["proposal_id"])
    assert proposal.agent.name == "claude-code" and proposal.source_tool == "claude-code"
    actions.accept_proposal(proposal, actor=reviewer, note="Matches the runbook.")

    found = structured(call(gateway.mcp_url, token, "search", {"query": "payments deploy window Tuesday"}))
    assert [hit["title"] for hit in found["results"]] == [NEW_FACT["title"]]
    hit = found["results"][0]
    assert hit["body"] == NEW_FACT["body"] and hit["approved_at"] and hit["review_by"]

    status = structured(call(gateway.mcp_url, token, "proposal_status", {"id": answer["proposal_id"]}))
    assert status["state"] == "accepted" and status["result_record"] == hit["id"]
    assert status["decision_note"] == "Matches the runbook."

    record = structured(call(gateway.mcp_url, token, "read", {"id": hit["id"]}))
    assert (
        record["deliverable"]
        and record["record"]["checksum"] == Record.objects.get(public_id=hit["id"]).approved_checksum
    )


def test_rejection_note_reaches_the_agent(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    answer = structured(propose(gateway, token))
    actions.reject_proposal(answer["proposal_id"], actor=reviewer, note="Already in the team handbook.")
    status = structured(call(gateway.mcp_url, token, "proposal_status", {"id": answer["proposal_id"]}))
    assert status["state"] == "rejected" and status["decision_note"] == "Already in the team handbook."
    assert "do not propose the same thing again" in status["next"]


def test_an_agent_withdraws_its_own_pending_proposal_and_no_one_elses(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    answer = structured(propose(gateway, token))
    proposal_id = answer["proposal_id"]

    theirs = call(gateway.mcp_url, agent_tokens["team-bot"], "withdraw_proposal", {"id": proposal_id})
    unknown = call(gateway.mcp_url, agent_tokens["team-bot"], "withdraw_proposal", {"id": "prop_0123456789ab"})
    assert theirs.is_error and "[not_found]" in text_of(theirs)
    assert text_of(theirs).replace(proposal_id, "ID") == text_of(unknown).replace("prop_0123456789ab", "ID")
    assert Proposal.objects.get(public_id=proposal_id).state == ProposalState.PENDING

    done = structured(
        call(
            gateway.mcp_url,
            token,
            "withdraw_proposal",
            {"id": proposal_id, "note": "The user corrected me: it is Wednesdays."},
        )
    )
    assert done["status"] == "withdrawn" and done["proposal"]["state"] == "withdrawn"
    assert Proposal.objects.get(public_id=proposal_id).decision_note == "The user corrected me: it is Wednesdays."
    status = structured(call(gateway.mcp_url, token, "proposal_status", {"id": proposal_id}))
    assert status["state"] == "withdrawn"

    again = call(gateway.mcp_url, token, "withdraw_proposal", {"id": proposal_id})
    assert again.is_error and "[invalid_transition]" in text_of(again) and "already withdrawn" in text_of(again)
    late = call(
        gateway.mcp_url,
        token,
        "withdraw_proposal",
        {
            "id": actions.reject_proposal(
                structured(propose(gateway, token, title="Another deploy note"))["proposal_id"],
                actor=reviewer,
                note="no",
            ).public_id
        },
    )
    assert late.is_error and "already rejected" in text_of(late)


def test_withheld_records_are_counted_and_read_gives_the_reason(gateway, agent_tokens, make_record):
    record = make_record(title="Deploy freeze", body="Deploys are frozen during the last week of December.")
    token = agent_tokens["claude-code"]
    disputed = structured(
        call(gateway.mcp_url, token, "dispute", {"id": record.public_id, "reason": "The freeze was lifted this year."})
    )
    assert disputed["status"] == "pending" and disputed["proposal"]["action"] == "dispute"

    found = structured(call(gateway.mcp_url, token, "search", {"query": "deploy freeze December"}))
    assert found["results"] == [] and found["withheld"] == {"disputed": 1}
    assert "disputed" in found["withheld_explained"]

    read = structured(call(gateway.mcp_url, token, "read", {"id": record.public_id}))
    assert read == {
        "id": record.public_id,
        "deliverable": False,
        "withheld": "disputed",
        "explanation": read["explanation"],
    }
    assert record.body not in str(read)


def test_revision_supersedes_and_read_points_to_the_current_version(gateway, agent_tokens, reviewer, make_record):
    old = make_record(title="On-call rota", body="The on-call rota is kept in the ops wiki under Rotations.")
    token = agent_tokens["claude-code"]
    answer = structured(
        propose(
            gateway,
            token,
            revises=old.public_id,
            title="On-call rota location",
            body="The on-call rota moved to PagerDuty schedules in November.",
        )
    )
    assert answer["proposal"]["action"] == "revise" and answer["proposal"]["target"] == old.public_id
    new_id = actions.accept_proposal(answer["proposal_id"], actor=reviewer).result_record.public_id

    read = structured(call(gateway.mcp_url, token, "read", {"id": old.public_id}))
    assert read["withheld"] == "superseded" and read["current_version"] == new_id


def test_list_returns_recent_deliverable_records(gateway, agent_tokens, make_record):
    first = make_record(title="First note", body="The staging database is refreshed from production nightly.")
    second = make_record(
        title="Second note",
        kind="decision",
        body="We chose PostgreSQL 16 for the analytics warehouse after the benchmark.",
    )
    data = structured(call(gateway.mcp_url, agent_tokens["claude-code"], "list", {}))
    assert [r["id"] for r in data["records"]] == [second.public_id, first.public_id]
    data = structured(call(gateway.mcp_url, agent_tokens["claude-code"], "list", {"kind": "decision"}))
    assert [r["id"] for r in data["records"]] == [second.public_id]
    bad = call(gateway.mcp_url, agent_tokens["claude-code"], "list", {"since": "last tuesday"})
    assert bad.is_error and "since: got 'last tuesday'" in text_of(bad)


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_a_since_past_the_calendar_in_utc_is_an_invalid_tool_error(gateway, agent_tokens, since):
    result = call(gateway.mcp_url, agent_tokens["claude-code"], "list", {"since": since})
    assert result.is_error
    assert f"[invalid] since: got '{since}'" in text_of(result)
    assert "between 1970-01-01 and 9999-12-30" in text_of(result)


def test_invalid_input_lists_every_problem_and_what_is_allowed(gateway, agent_tokens):
    result = call(
        gateway.mcp_url,
        agent_tokens["claude-code"],
        "propose_context",
        {"title": "x", "body": "too short", "kind": "rumour", "space": "team", "reason": "?"},
    )
    text = text_of(result)
    assert result.is_error and "[invalid]" in text
    for expected in ("title:", "body:", "kind: got 'rumour'", "procedure", "reason:"):
        assert expected in text
    assert not Proposal.objects.exists()

    result = call(gateway.mcp_url, agent_tokens["claude-code"], "search", {"query": "x", "mode": "fuzzy"})
    assert result.is_error and "hybrid" in text_of(result)

    result = call(gateway.mcp_url, agent_tokens["claude-code"], "read", {"id": "../../etc/passwd"})
    assert result.is_error and "rec_" in text_of(result)


def test_exact_duplicate_is_refused_with_the_existing_id(gateway, agent_tokens, make_record):
    record = make_record(**{k: NEW_FACT[k] for k in ("title", "body", "kind", "space", "tags")})
    result = propose(gateway, agent_tokens["claude-code"])
    assert result.is_error and "[duplicate]" in text_of(result) and record.public_id in text_of(result)


def test_near_duplicate_is_not_stored_unless_confirmed(gateway, agent_tokens, make_record):
    record = make_record(**{k: NEW_FACT[k] for k in ("title", "body", "kind", "space", "tags")})
    token = agent_tokens["claude-code"]
    near = NEW_FACT["body"].replace("every Tuesday", "each Tuesday")
    answer = structured(propose(gateway, token, body=near))
    assert answer["status"] == "similar_exists" and [s["id"] for s in answer["similar"]] == [record.public_id]
    assert answer["similar"][0]["similarity"] >= answer["threshold"] == 0.85
    assert "revises=" in answer["message"] and "confirm_duplicate" in answer["message"]
    assert not Proposal.objects.filter(state=ProposalState.PENDING).exists()

    # Revising that very record is not a duplicate of it ...
    revision = structured(propose(gateway, token, body=near, revises=record.public_id))
    assert revision["status"] == "pending"
    # ... and a confirmed create is stored.
    confirmed = structured(propose(gateway, token, body=near + " Hotfixes are exempt.", confirm_duplicate=True))
    assert confirmed["status"] == "pending"


def test_near_duplicate_check_stays_inside_the_space(gateway, agent_tokens, make_record):
    make_record(**{**{k: NEW_FACT[k] for k in ("title", "body", "kind", "tags")}, "space": "personal"})
    answer = structured(propose(gateway, agent_tokens["team-bot"]))
    assert answer["status"] == "pending"  # the personal look-alike does not exist for the team space


def test_spaces_are_invisible_to_agents_without_them(gateway, agent_tokens, make_record):
    secret = make_record(
        space="personal",
        title="My dentist",
        tags=["health"],
        body="My dentist appointment is every six months at the clinic on Elm Street.",
    )
    token = agent_tokens["team-bot"]
    found = structured(call(gateway.mcp_url, token, "search", {"query": "dentist appointment Elm Street"}))
    assert found["results"] == [] and found["withheld"] == {}

    missing = text_of(call(gateway.mcp_url, token, "read", {"id": secret.public_id}))
    nonexistent = text_of(call(gateway.mcp_url, token, "read", {"id": "rec_000000000000"}))
    assert missing.replace(secret.public_id, "X") == nonexistent.replace("rec_000000000000", "X")

    described = structured(call(gateway.mcp_url, token, "describe"))
    assert [s["slug"] for s in described["spaces"]] == ["team"]
    assert "health" not in {t["name"] for t in described["tags"]}

    refused = call(gateway.mcp_url, token, "propose_context", {**NEW_FACT, "space": "personal"})
    assert refused.is_error and "your spaces: team" in text_of(refused)
    refused = call(gateway.mcp_url, token, "dispute", {"id": secret.public_id, "reason": "It moved to Oak Street."})
    assert refused.is_error and "[not_found]" in text_of(refused)


def test_missing_unknown_and_revoked_tokens_get_401_with_a_reason(gateway, agent_tokens):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    cases = {
        None: "Missing agent token",
        "not-a-token": "Malformed agent token",
        "vt_" + "x" * 43: "Unknown agent token",
        agent_tokens["gone"]: "was revoked",
    }
    for token, message in cases.items():
        status, headers, data = http("POST", gateway.mcp_url, token=token, body=body, headers=accept)
        assert status == 401 and message in data["message"], (token, data)
        assert headers["www-authenticate"].startswith("Bearer ")

    # The client cannot even initialize; what it raises (an HTTP status error,
    # often in an exception group) is the SDK's business, not ours.
    with pytest.raises(Exception):  # noqa: B017
        call(gateway.mcp_url, "vt_" + "x" * 43, "describe")


def test_a_token_revoked_mid_session_stops_working_on_the_next_call(gateway, agent_tokens, reviewer):
    token = agent_tokens["team-bot"]

    async def session(client):
        before = await client.call_tool("describe", {})
        await asyncio.to_thread(actions.revoke_agent, "team-bot", actor=reviewer)
        try:
            after = await client.call_tool("describe", {})
        except Exception as exc:  # the guard answers 401 before the SDK sees the call
            return before, f"refused: {exc}"
        return before, text_of(after) if after.is_error else "answered"

    before, after = over_http(gateway.mcp_url, token, session)
    assert not before.is_error
    assert after.startswith("refused") or "revoked" in after


def test_foreign_host_or_origin_is_refused(gateway, agent_tokens):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    base_headers = {"Accept": "application/json, text/event-stream"}
    token = agent_tokens["claude-code"]
    status, _, _ = http(
        "POST", gateway.mcp_url, token=token, body=body, headers={**base_headers, "Host": "evil.example.com"}
    )
    assert status == 421
    status, _, _ = http(
        "POST", gateway.mcp_url, token=token, body=body, headers={**base_headers, "Origin": "http://evil.example.com"}
    )
    assert status == 403
    status, _, _ = http(
        "POST", gateway.mcp_url, token=token, body=body, headers={**base_headers, "Origin": gateway.base}
    )
    assert status == 200
    port = int(gateway.base.rsplit(":", 1)[1])
    for other in (f"http://127.0.0.1:{port + 1}", f"http://localhost:{port + 1}", f"https://127.0.0.1:{port}"):
        status, _, data = http(
            "POST", gateway.mcp_url, token=token, body=body, headers={**base_headers, "Origin": other}
        )
        assert status == 403 and gateway.base in data["message"], (other, data)


def test_oversized_body_is_refused_with_the_limit(gateway, agent_tokens):
    status, _, data = http(
        "POST",
        gateway.mcp_url,
        token=agent_tokens["claude-code"],
        raw=b"{" + b" " * (300 * 1024) + b"}",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    assert status == 413 and "262144 bytes" in data["message"]


def test_agent_last_seen_is_stamped(gateway, agent_tokens):
    call(gateway.mcp_url, agent_tokens["claude-code"], "describe")
    assert Agent.objects.get(name="claude-code").last_seen_at is not None


def test_writes_are_rate_limited_per_agent(agent_tokens, tmp_path):
    with running_daemon(tmp_path, VETTED_PROPOSALS_PER_MINUTE="2") as daemon:
        token = agent_tokens["claude-code"]
        first = call(daemon.mcp_url, token, "propose_context", NEW_FACT)
        second = call(daemon.mcp_url, token, "propose_context", {**NEW_FACT, "space": "personal"})
        third = call(
            daemon.mcp_url, token, "propose_context", {**NEW_FACT, "title": "Another title for the same deploy routine"}
        )
        other_agent = call(daemon.mcp_url, agent_tokens["team-bot"], "search", {"query": "deploy"})
    assert not first.is_error and not second.is_error
    assert third.is_error and "[rate_limited]" in text_of(third) and "retry in" in text_of(third)
    assert not other_agent.is_error
    assert Proposal.objects.count() == 2


def test_quality_check_stays_in_the_agents_spaces(gateway, agent_tokens, make_record):
    make_record(space="personal", title="Dentist day", body="My dentist appointment is every six months on Tuesday.")
    make_record(space="personal", title="Dentist day", body="My dentist appointment is every six months on Thursday.")
    mine = structured(call(gateway.mcp_url, agent_tokens["claude-code"], "quality_check", {}))
    assert mine["counts"].get("possible_contradiction") == 1
    team = structured(call(gateway.mcp_url, agent_tokens["team-bot"], "quality_check", {}))
    assert team["spaces"] == ["team"] and "entist" not in str(team)
    refused = call(gateway.mcp_url, agent_tokens["team-bot"], "quality_check", {"space": "personal"})
    assert refused.is_error and "your spaces: team" in text_of(refused)


def test_near_duplicate_of_its_own_pending_proposal_is_not_stored_twice(gateway, agent_tokens):
    token = agent_tokens["claude-code"]
    first = structured(propose(gateway, token))
    near = NEW_FACT["body"].replace("every Tuesday", "each Tuesday")
    answer = structured(propose(gateway, token, body=near))
    assert answer["status"] == "similar_exists"
    assert answer["similar"] == [{**answer["similar"][0], "id": first["proposal_id"], "pending": True}]
    assert "waiting for review" in answer["message"]
    assert Proposal.objects.filter(state=ProposalState.PENDING).count() == 1
    other_space = structured(propose(gateway, token, body=near, space="personal"))
    assert other_space["status"] == "pending"  # a look-alike in another space is no duplicate


def test_another_agents_pending_proposal_is_never_named(gateway, agent_tokens):
    first = structured(propose(gateway, agent_tokens["claude-code"]))
    near = NEW_FACT["body"].replace("every Tuesday", "each Tuesday")
    answer = structured(propose(gateway, agent_tokens["team-bot"], body=near))
    assert answer["status"] == "pending"  # stored; the reviewer sees both side by side
    assert first["proposal_id"] not in str(answer)
    assert Proposal.objects.filter(state=ProposalState.PENDING).count() == 2
