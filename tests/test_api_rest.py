"""The REST API (/api/v1/) against the real daemon.

The agent side talks HTTP to `manage.py serve` (the ``gateway`` fixture)
with the raw bearer tokens from ``agent_tokens``; the test process plays
the reviewer by calling reviews.actions directly, on committed data.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from mcp_bridge.api import schema as s
from reviews import actions
from reviews.models import Agent, AuditEvent, Proposal
from tests.conftest import GOOD_BODY, content
from tests.gateway_support import http, running_daemon

pytestmark = pytest.mark.slow

API = "/api/v1"
REASON = "Read it in the team handbook today"


# --------------------------------------------------------------------------- helpers


def api(gateway, method, path, token=None, **kwargs):
    return http(method, gateway.base + API + path, token=token, **kwargs)


def approved(reviewer, agent_name="claude-code", **overrides):
    """An approved record proposed by ``agent_name`` and accepted by ``reviewer`` (committed)."""
    agent = Agent.objects.get(name=agent_name)
    proposal = actions.propose_create(agent=agent, reason=REASON, **content(**overrides))
    return actions.accept_proposal(proposal, actor=reviewer).result_record


def proposal_body(**overrides) -> dict:
    data = {**content(), "reason": REASON}
    data.update(overrides)
    return data


def hit_ids(answer) -> list[str]:
    return [hit["id"] for hit in answer["results"]]


def keys_of(serializer_class) -> tuple[set[str], set[str]]:
    """(required keys, all documented keys) of a response serializer."""
    fields = serializer_class().fields
    return {name for name, f in fields.items() if f.required}, set(fields)


def assert_documented(data: dict, serializer_class) -> None:
    required, documented = keys_of(serializer_class)
    assert required <= set(data), f"{serializer_class.__name__}: missing {sorted(required - set(data))}"
    assert set(data) <= documented, f"{serializer_class.__name__}: undocumented {sorted(set(data) - documented)}"


def fetch_no_redirect(url, headers=None):
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


# --------------------------------------------------------------------------- describe


def test_describe_reports_the_agents_spaces_and_counts(gateway, agent_tokens, reviewer):
    approved(reviewer, title="Team fact one", tags=["billing"])
    approved(
        reviewer,
        space="personal",
        title="Personal preference",
        kind="preference",
        body="I prefer short commit messages written in the imperative mood, always.",
        tags=["zz-private-marker"],
    )
    status, _, data = api(gateway, "GET", "/describe", agent_tokens["claude-code"])
    assert status == 200
    assert data["agent"]["name"] == "claude-code" and data["agent"]["spaces"] == ["personal", "team"]
    assert {item["slug"]: item["records"] for item in data["spaces"]} == {"personal": 1, "team": 1}
    assert data["records_current"] == 2
    kinds = {k["name"]: k["records"] for k in data["kinds"]}
    assert kinds["fact"] == 1 and kinds["preference"] == 1
    assert {t["name"] for t in data["tags"]} == {"billing", "zz-private-marker"}


def test_team_only_agent_sees_no_personal_counts_or_tags(gateway, agent_tokens, reviewer):
    approved(reviewer, title="Team fact one", tags=["billing"])
    approved(
        reviewer,
        space="personal",
        title="Personal preference",
        kind="preference",
        body="I prefer short commit messages written in the imperative mood, always.",
        tags=["zz-private-marker"],
    )
    personal = Agent.objects.get(name="claude-code")
    actions.propose_create(agent=personal, reason=REASON, **content(space="personal", title="Pending personal"))
    status, _, data = api(gateway, "GET", "/describe", agent_tokens["team-bot"])
    assert status == 200
    assert data["agent"]["spaces"] == ["team"]
    assert [(s["slug"], s["records"]) for s in data["spaces"]] == [("team", 1)]
    assert data["records_current"] == 1
    assert sum(k["records"] for k in data["kinds"]) == 1
    assert {t["name"] for t in data["tags"]} == {"billing"}
    assert data["pending_proposals"] == {"yours": 0}
    assert "zz-private-marker" not in str(data)


# --------------------------------------------------------------------------- propose, review, read


def test_pending_proposal_is_invisible_until_a_reviewer_accepts_it(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    body = proposal_body(
        title="Deploy window",
        body="Production deploys of the quokka service happen on Tuesdays between ten and noon, never on Fridays.",
        tags=["deploys"],
    )
    status, _, created = api(gateway, "POST", "/proposals", token, body=body)
    assert status == 201, created
    assert created["status"] == "pending" and re.fullmatch(r"prop_[0-9a-f]{12}", created["proposal_id"])
    assert created["proposal"]["state"] == "pending" and created["proposal"]["action"] == "create"
    proposal_id = created["proposal_id"]

    status, _, found = api(gateway, "GET", "/search?q=quokka+deploys", token)
    assert status == 200 and found["results"] == [] and found["withheld_total"] == 0
    status, _, pending = api(gateway, "GET", f"/proposals/{proposal_id}", token)
    assert status == 200 and pending["state"] == "pending" and pending["result_record"] is None

    actions.accept_proposal(Proposal.objects.get(public_id=proposal_id), actor=reviewer)

    status, _, decided = api(gateway, "GET", f"/proposals/{proposal_id}", token)
    assert status == 200 and decided["state"] == "accepted" and decided["decided_at"]
    record_id = decided["result_record"]
    assert re.fullmatch(r"rec_[0-9a-f]{12}", record_id) and record_id in decided["next"]
    status, _, found = api(gateway, "GET", "/search?q=quokka+deploys", token)
    assert status == 200 and hit_ids(found) == [record_id]
    status, _, read = api(gateway, "GET", f"/records/{record_id}", token)
    assert status == 200 and read["deliverable"] is True
    assert read["record"]["body"] == body["body"] and read["record"]["approved_by"] == "rita"
    status, _, listed = api(gateway, "GET", "/records", token)
    assert status == 200 and [r["id"] for r in listed["records"]] == [record_id]


def test_rejected_proposal_shows_the_reviewers_note(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    status, _, created = api(gateway, "POST", "/proposals", token, body=proposal_body())
    assert status == 201
    actions.reject_proposal(created["proposal_id"], actor=reviewer, note="We moved billing to the monorepo.")
    status, _, decided = api(gateway, "GET", f"/proposals/{created['proposal_id']}", token)
    assert status == 200
    assert decided["state"] == "rejected" and decided["result_record"] is None
    assert decided["decision_note"] == "We moved billing to the monorepo."
    status, _, found = api(gateway, "GET", "/search?q=billing+repository", token)
    assert status == 200 and found["results"] == []


def test_other_agents_proposals_do_not_exist_for_an_agent(gateway, agent_tokens):
    status, _, created = api(gateway, "POST", "/proposals", agent_tokens["claude-code"], body=proposal_body())
    assert status == 201
    status, _, data = api(gateway, "GET", f"/proposals/{created['proposal_id']}", agent_tokens["team-bot"])
    assert status == 404 and data["error"] == "not_found"


def test_an_agent_withdraws_its_own_pending_proposal(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    status, _, created = api(gateway, "POST", "/proposals", token, body=proposal_body())
    assert status == 201
    proposal_id = created["proposal_id"]
    status, _, data = api(
        gateway, "POST", f"/proposals/{proposal_id}/withdrawal", token, body={"note": "Proposed twice by mistake"}
    )
    assert status == 200, data
    assert data["status"] == "withdrawn" and data["proposal"]["state"] == "withdrawn"
    assert_documented(data, s.WithdrawnSerializer)
    proposal = Proposal.objects.get(public_id=proposal_id)
    assert proposal.state == "withdrawn" and proposal.decision_note == "Proposed twice by mistake"
    event = AuditEvent.objects.filter(proposal_ref=proposal_id).latest("pk")
    assert event.event_type == "proposal.withdrawn" and event.actor == "claude-code"
    # Once withdrawn it is decided: neither the agent nor the reviewer can act on it again.
    status, _, data = api(gateway, "POST", f"/proposals/{proposal_id}/withdrawal", token)
    assert status == 409 and data["error"] == "invalid_transition" and "already withdrawn" in data["message"]


def test_a_withdrawn_dispute_stops_withholding_its_record(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    record = approved(reviewer)
    status, _, disputed = api(
        gateway, "POST", f"/records/{record.public_id}/dispute", token, body={"reason": "I misread the handbook, sorry"}
    )
    assert status == 201
    assert api(gateway, "GET", f"/records/{record.public_id}", token)[2]["deliverable"] is False
    status, _, _ = api(gateway, "POST", f"/proposals/{disputed['proposal_id']}/withdrawal", token, body={})
    assert status == 200
    assert api(gateway, "GET", f"/records/{record.public_id}", token)[2]["deliverable"] is True


def test_an_agent_cannot_withdraw_another_agents_proposal_or_tell_it_exists(gateway, agent_tokens):
    status, _, created = api(gateway, "POST", "/proposals", agent_tokens["claude-code"], body=proposal_body())
    assert status == 201
    theirs = api(gateway, "POST", f"/proposals/{created['proposal_id']}/withdrawal", agent_tokens["team-bot"])
    unknown = api(gateway, "POST", "/proposals/prop_0123456789ab/withdrawal", agent_tokens["team-bot"])
    assert theirs[0] == unknown[0] == 404
    assert theirs[2]["message"].replace(created["proposal_id"], "ID") == unknown[2]["message"].replace(
        "prop_0123456789ab", "ID"
    )
    assert Proposal.objects.get(public_id=created["proposal_id"]).state == "pending"
    status, _, data = api(gateway, "POST", "/proposals/rec_0123456789ab/withdrawal", agent_tokens["team-bot"])
    assert status == 400 and "id" in data["fields"]
    status, _, data = api(
        gateway,
        "POST",
        f"/proposals/{created['proposal_id']}/withdrawal",
        agent_tokens["claude-code"],
        body={"reason": "wrong field"},
    )
    assert status == 400 and "reason" in data["fields"]


def test_accepted_revision_supersedes_the_old_record(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    old = approved(reviewer)
    new_body = "The billing API lives in the acme/payments monorepo since March and deploys from main daily."
    status, _, created = api(
        gateway,
        "POST",
        "/proposals",
        token,
        body={"revises": old.public_id, "body": new_body, "reason": "The repository moved"},
    )
    assert status == 201, created
    assert created["proposal"]["action"] == "revise" and created["proposal"]["target"] == old.public_id
    # Until accepted, the old record is still the one delivered.
    status, _, read = api(gateway, "GET", f"/records/{old.public_id}", token)
    assert status == 200 and read["deliverable"] is True

    accepted = actions.accept_proposal(created["proposal_id"], actor=reviewer)
    new_id = accepted.result_record.public_id

    status, _, read = api(gateway, "GET", f"/records/{old.public_id}", token)
    assert status == 200
    assert read["deliverable"] is False and read["withheld"] == "superseded"
    assert read["current_version"] == new_id and "record" not in read
    assert new_id in read["explanation"]
    status, _, read = api(gateway, "GET", f"/records/{new_id}", token)
    assert status == 200 and read["record"]["body"] == new_body and read["record"]["supersedes"] == old.public_id
    status, _, found = api(gateway, "GET", "/search?q=billing+API+repository", token)
    assert status == 200 and hit_ids(found) == [new_id]


# --------------------------------------------------------------------------- dispute, retirement


def test_disputed_record_is_withheld_from_search_and_counted(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    record = approved(reviewer)
    status, _, found = api(gateway, "GET", "/search?q=billing+repository", token)
    assert hit_ids(found) == [record.public_id] and found["withheld_total"] == 0

    status, _, created = api(
        gateway,
        "POST",
        f"/records/{record.public_id}/dispute",
        token,
        body={"reason": "The repository was archived last week"},
    )
    assert status == 201, created
    assert created["proposal"]["action"] == "dispute" and created["proposal"]["target"] == record.public_id

    status, _, found = api(gateway, "GET", "/search?q=billing+repository", token)
    assert status == 200 and found["results"] == []
    assert found["withheld"] == {"disputed": 1} and found["withheld_total"] == 1
    assert set(found["withheld_explained"]) == {"disputed"}
    status, _, read = api(gateway, "GET", f"/records/{record.public_id}", token)
    assert read["deliverable"] is False and read["withheld"] == "disputed"

    status, _, again = api(
        gateway, "POST", f"/records/{record.public_id}/dispute", token, body={"reason": "Still archived, as I said"}
    )
    assert status == 409 and again["existing_id"] == created["proposal_id"]


def test_retirement_proposal_is_stored_and_the_record_stays_until_accepted(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    record = approved(reviewer)
    status, _, created = api(
        gateway,
        "POST",
        f"/records/{record.public_id}/retirement",
        token,
        body={"reason": "Billing was shut down entirely"},
    )
    assert status == 201, created
    assert created["status"] == "pending"
    assert created["proposal"]["action"] == "retire" and created["proposal"]["target"] == record.public_id
    status, _, found = api(gateway, "GET", "/search?q=billing+repository", token)
    assert hit_ids(found) == [record.public_id]

    status, _, again = api(
        gateway,
        "POST",
        f"/records/{record.public_id}/retirement",
        token,
        body={"reason": "Billing was shut down entirely"},
    )
    assert status == 409 and again["error"] == "duplicate" and again["existing_id"] == created["proposal_id"]

    actions.accept_proposal(created["proposal_id"], actor=reviewer)
    status, _, found = api(gateway, "GET", "/search?q=billing+repository", token)
    assert found["results"] == [] and found["withheld"] == {"retired": 1}


# --------------------------------------------------------------------------- duplicates


def test_exact_duplicate_is_refused_with_the_existing_id(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    record = approved(reviewer)
    before = Proposal.objects.count()
    status, _, data = api(gateway, "POST", "/proposals", token, body=proposal_body())
    assert status == 409, data
    assert data["error"] == "duplicate" and data["existing_id"] == record.public_id
    assert record.public_id in data["message"]
    assert Proposal.objects.count() == before

    other = proposal_body(
        title="Something else entirely",
        body="The office plants are watered every Monday by whoever arrives first in the morning.",
    )
    status, _, first = api(gateway, "POST", "/proposals", token, body=other)
    assert status == 201
    status, _, data = api(gateway, "POST", "/proposals", token, body=other)
    assert status == 409 and data["existing_id"] == first["proposal_id"]  # its own: named
    # Another agent's identical proposal is never named: stored, for the reviewer to compare.
    status, _, data = api(gateway, "POST", "/proposals", agent_tokens["team-bot"], body=other)
    assert status == 201 and first["proposal_id"] not in str(data)


def test_near_duplicate_is_not_stored_and_names_the_similar_record(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    record = approved(reviewer)
    near = proposal_body(body=GOOD_BODY.replace("weekday", "workday"))
    before = Proposal.objects.count()

    status, _, data = api(gateway, "POST", "/proposals", token, body=near)
    assert status == 409, data
    assert data["status"] == "similar_exists"
    assert [h["id"] for h in data["similar"]] == [record.public_id]
    assert data["similar"][0]["similarity"] >= data["threshold"]
    assert record.public_id in data["message"] and "confirm_duplicate" in data["message"]
    assert Proposal.objects.count() == before

    # The same text in another space is not a near duplicate of a team record.
    status, _, data = api(gateway, "POST", "/proposals", token, body={**near, "space": "personal"})
    assert status == 201, data

    status, _, data = api(gateway, "POST", "/proposals", token, body={**near, "confirm_duplicate": True})
    assert status == 201, data
    assert data["status"] == "pending"
    assert Proposal.objects.count() == before + 2


# --------------------------------------------------------------------------- validation


def test_every_invalid_field_is_reported_at_once(gateway, agent_tokens):
    bad = {"title": "", "body": "too short", "kind": "rumour", "space": "everyone", "reason": "", "tags": ["Bad Tag!"]}
    status, _, data = api(gateway, "POST", "/proposals", agent_tokens["claude-code"], body=bad)
    assert status == 400
    assert data["error"] == "invalid"
    assert set(data["fields"]) == {"title", "body", "kind", "space", "reason", "tags"}
    for name in data["fields"]:
        assert name in data["message"]
    assert Proposal.objects.count() == 0


def test_unknown_fields_are_refused_by_name(gateway, agent_tokens):
    status, _, data = api(gateway, "POST", "/proposals", agent_tokens["claude-code"], body=proposal_body(colour="blue"))
    assert status == 400 and set(data["fields"]) == {"colour"}
    assert "allowed" in data["fields"]["colour"] and "reason" in data["fields"]["colour"]
    status, _, data = api(
        gateway,
        "POST",
        "/records/rec_0123456789ab/dispute",
        agent_tokens["claude-code"],
        body={"reason": "It is wrong", "severity": "high"},
    )
    assert status == 400 and set(data["fields"]) == {"severity"}
    assert Proposal.objects.count() == 0


def test_agent_identity_comes_from_the_token_not_the_body(gateway, agent_tokens):
    claude = Agent.objects.get(name="claude-code")
    assert claude.source_tool == "claude-code"
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        agent_tokens["claude-code"],
        body=proposal_body(agent="team-bot", source_tool="evil-tool"),
    )
    assert status == 400 and set(data["fields"]) == {"agent", "source_tool"}
    assert Proposal.objects.count() == 0

    for name in ("claude-code", "team-bot"):
        status, _, data = api(
            gateway,
            "POST",
            "/proposals",
            agent_tokens[name],
            body=proposal_body(title=f"Billing API repository for {name}", confirm_duplicate=True),
        )
        assert status == 201, data
        stored = Proposal.objects.select_related("agent").get(public_id=data["proposal_id"])
        assert stored.agent.name == name
        assert stored.source_tool == Agent.objects.get(name=name).source_tool
    assert Proposal.objects.get(agent__name="claude-code").source_tool == "claude-code"


@pytest.mark.parametrize("raw", [b'["a", "list"]', b"42", b'"text"', b"null"])
def test_a_json_body_that_is_not_an_object_is_refused(gateway, agent_tokens, raw):
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        agent_tokens["claude-code"],
        raw=raw,
        headers={"Content-Type": "application/json"},
    )
    assert status == 400, data
    assert data["error"] == "invalid" and "JSON object" in data["fields"]["body"]


def test_invalid_json_is_refused_with_a_clear_message(gateway, agent_tokens):
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        agent_tokens["claude-code"],
        raw=b'{"title": "half',
        headers={"Content-Type": "application/json"},
    )
    assert status == 400
    assert data["error"] == "bad_request" and "JSON" in data["message"]


def test_a_non_json_content_type_is_refused_with_415(gateway, agent_tokens):
    raw = urllib.parse.urlencode(proposal_body(tags="billing")).encode()
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        agent_tokens["claude-code"],
        raw=raw,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 415
    assert data["error"] == "unsupported_media_type" and "application/json" in data["message"]
    assert Proposal.objects.count() == 0


@pytest.mark.parametrize(
    "query, field",
    [
        ("/search?q=billing&mode=fuzzy", "mode"),
        ("/search?q=billing&limit=0", "limit"),
        ("/search?q=billing&limit=51", "limit"),
        ("/search?q=billing&limit=ten", "limit"),
        ("/search?q=billing&kind=rumour", "kind"),
        ("/search?q=billing&space=personal", "space"),
        ("/search?q=billing&tags=Not%20A%20Tag!", "tags"),
        ("/search?q=%20%20", "query"),
        ("/search", "query"),
        ("/records?limit=101", "limit"),
        ("/records?limit=-1", "limit"),
        ("/records?kind=rumour", "kind"),
        ("/records?space=system", "space"),
        ("/records?since=last+tuesday", "since"),
        ("/records?since=0001-01-01T00:00:00%2B14:00", "since"),  # past datetime's range once in UTC
        ("/records?since=9999-12-31T23:59:59-14:00", "since"),
    ],
)
def test_bad_query_parameters_are_refused_by_name(gateway, agent_tokens, query, field):
    status, _, data = api(gateway, "GET", query, agent_tokens["team-bot"])
    assert status == 400, data
    assert data["error"] == "invalid" and field in data["fields"]


def test_several_bad_query_parameters_are_reported_together(gateway, agent_tokens):
    status, _, data = api(gateway, "GET", "/search?q=billing&mode=fuzzy&limit=0&kind=rumour", agent_tokens["team-bot"])
    assert status == 400 and set(data["fields"]) == {"mode", "limit", "kind"}
    assert (
        "your spaces: team"
        in api(gateway, "GET", "/search?q=x&space=personal", agent_tokens["team-bot"])[2]["fields"]["space"]
    )


HOSTILE_IDS = [
    "..%2F..%2Fetc%2Fpasswd",
    "..%252F..%252Fetc%252Fpasswd",
    urllib.parse.quote("rec_' OR 1=1 --"),
    urllib.parse.quote("prop_' OR '1'='1"),
    "rec_%00",
    "%ff%fe",
    "rec_" + "a" * 5000,
    urllib.parse.quote("rec_0123456789ab; DROP TABLE reviews_record"),
]


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_hostile_ids_are_refused_never_a_server_error(gateway, agent_tokens, hostile):
    token = agent_tokens["claude-code"]
    for method, path, body in [
        ("GET", f"/records/{hostile}", None),
        ("GET", f"/proposals/{hostile}", None),
        ("POST", f"/records/{hostile}/dispute", {"reason": "It is wrong"}),
        ("POST", f"/records/{hostile}/retirement", {"reason": "It is gone"}),
    ]:
        status, _, data = api(gateway, method, path, token, body=body)
        assert status in (400, 404), (method, path, status, data)
        assert isinstance(data, dict) and data["error"] in ("invalid", "not_found"), (method, path, data)
    assert Proposal.objects.count() == 0


def test_unknown_api_paths_answer_a_json_404(gateway, agent_tokens):
    for method, path in [
        ("GET", "/nothing-here"),
        ("GET", "/records/rec_0123456789ab/history"),
        ("POST", "/records"),
        ("GET", "/describe/"),
    ]:
        status, headers, data = api(
            gateway, method, path, agent_tokens["claude-code"], body={} if method == "POST" else None
        )
        assert status in (404, 405), (method, path, data)
        assert headers["content-type"] == "application/json" and data["error"] in ("not_found", "method_not_allowed")
    status, _, data = api(gateway, "GET", "/nothing-here", agent_tokens["claude-code"])
    assert "/api/v1/schema" in data["message"]
    # Unknown paths are no way around the token.
    assert api(gateway, "GET", "/nothing-here")[0] == 401


def test_hostile_record_id_in_the_body_is_refused(gateway, agent_tokens):
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        agent_tokens["claude-code"],
        body={"revises": "rec_' OR 1=1 --", "body": GOOD_BODY, "reason": REASON},
    )
    assert status == 400 and "revises" in data["fields"]


# --------------------------------------------------------------------------- authentication


def test_missing_malformed_unknown_and_revoked_tokens_get_distinct_401s(gateway, agent_tokens):
    cases = {
        "missing": {},
        "malformed": {"Authorization": "Bearer not-a-vetted-token"},
        "unknown": {"Authorization": "Bearer vt_thisTokenWasNeverIssuedHere0000000000000"},
        "revoked": {"Authorization": f"Bearer {agent_tokens['gone']}"},
    }
    messages = {}
    for case, headers in cases.items():
        status, response_headers, data = api(gateway, "GET", "/describe", headers=headers)
        assert status == 401, (case, data)
        assert data["error"] == "unauthorized"
        assert response_headers["www-authenticate"].startswith("Bearer"), case
        messages[case] = data["message"]
    assert messages["missing"].startswith("Missing agent token") and "Authorization: Bearer" in messages["missing"]
    assert messages["malformed"].startswith("Malformed agent token")
    assert messages["unknown"].startswith("Unknown agent token")
    assert "'gone' was revoked" in messages["revoked"]
    assert len(set(messages.values())) == 4
    # Writes are refused the same way, and nothing is stored.
    status, _, _ = api(gateway, "POST", "/proposals", agent_tokens["gone"], body=proposal_body())
    assert status == 401 and Proposal.objects.count() == 0
    # A valid token gets in (the 401s above are about the token, not the endpoint).
    assert api(gateway, "GET", "/describe", agent_tokens["team-bot"])[0] == 200


def test_a_reviewers_session_cookie_does_not_authorise_the_api(gateway, agent_tokens, reviewer):
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(reviewer.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = reviewer.get_session_auth_hash()
    session.create()
    cookie = {"Cookie": f"{settings.SESSION_COOKIE_NAME}={session.session_key}"}

    # The cookie is a real login: it opens the reviewer's inbox on the daemon...
    status, _, _ = fetch_no_redirect(gateway.base + "/", headers=cookie)
    assert status == 200
    assert fetch_no_redirect(gateway.base + "/")[0] == 302
    # ... but not the API.
    status, headers, data = api(gateway, "GET", "/describe", headers=cookie)
    assert status == 401 and data["message"].startswith("Missing agent token") and "www-authenticate" in headers
    status, _, data = api(gateway, "POST", "/proposals", headers=cookie, body=proposal_body())
    assert status == 401
    assert Proposal.objects.count() == 0


def test_an_agent_token_does_not_open_the_site(gateway, agent_tokens):
    status, _, _ = fetch_no_redirect(
        gateway.base + "/", headers={"Authorization": f"Bearer {agent_tokens['team-bot']}"}
    )
    assert status == 302


# --------------------------------------------------------------------------- space isolation


def test_team_agent_cannot_see_or_touch_personal_records(gateway, agent_tokens, reviewer):
    token = agent_tokens["team-bot"]
    personal = approved(
        reviewer,
        space="personal",
        title="Billing preference",
        body="For billing work I prefer the acme/billing-api repository checked out under ~/src.",
    )
    team = approved(reviewer)

    status, _, hidden = api(gateway, "GET", f"/records/{personal.public_id}", token)
    status_missing, _, missing = api(gateway, "GET", "/records/rec_0123456789ab", token)
    assert status == status_missing == 404
    assert hidden["message"].replace(personal.public_id, "ID") == missing["message"].replace("rec_0123456789ab", "ID")
    # The owner of the space can read it (the 404 is about space, not the id).
    assert api(gateway, "GET", f"/records/{personal.public_id}", agent_tokens["claude-code"])[0] == 200

    for path in (f"/records/{personal.public_id}/dispute", f"/records/{personal.public_id}/retirement"):
        status, _, data = api(gateway, "POST", path, token, body={"reason": "I think it is wrong"})
        assert status == 404 and data["error"] == "not_found"
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        token,
        body={"revises": personal.public_id, "body": GOOD_BODY + " Really.", "reason": REASON},
    )
    assert status == 404

    status, _, data = api(
        gateway, "POST", "/proposals", token, body=proposal_body(space="personal", title="A personal note")
    )
    assert status in (400, 403)
    assert "team" in str(data) and "personal" in data["message"]

    status, _, found = api(gateway, "GET", "/search?q=billing+repository+acme&limit=50", token)
    assert status == 200 and hit_ids(found) == [team.public_id]
    status, _, listed = api(gateway, "GET", "/records?limit=100", token)
    assert [r["id"] for r in listed["records"]] == [team.public_id]

    # A withheld personal record is not counted for a team agent either.
    status, _, _ = api(
        gateway,
        "POST",
        f"/records/{personal.public_id}/dispute",
        agent_tokens["claude-code"],
        body={"reason": "I moved it to ~/code"},
    )
    assert status == 201
    status, _, mine = api(gateway, "GET", "/search?q=billing+repository+acme&limit=50", agent_tokens["claude-code"])
    assert mine["withheld"] == {"disputed": 1}
    status, _, found = api(gateway, "GET", "/search?q=billing+repository+acme&limit=50", token)
    assert hit_ids(found) == [team.public_id] and found["withheld_total"] == 0 and found["withheld"] == {}
    assert Proposal.objects.filter(agent__name="team-bot").count() == 0


# --------------------------------------------------------------------------- body size


def test_a_body_over_the_limit_is_refused_with_413_stating_the_limit(gateway, agent_tokens):
    from django.conf import settings

    limit = settings.VETTED_MAX_REQUEST_BYTES
    assert limit == 256 * 1024
    big = proposal_body(body="word " * (limit // 5 + 100))
    status, _, data = api(gateway, "POST", "/proposals", agent_tokens["claude-code"], body=big)
    assert status == 413, data
    assert data["error"] == "too_large" and str(limit) in data["message"]
    assert Proposal.objects.count() == 0
    # Just under the limit, the body reaches the API (and its validation).
    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        agent_tokens["claude-code"],
        body=proposal_body(body="word " * (limit // 5 - 200)),
    )
    assert status == 400 and "body" in data["fields"]


# --------------------------------------------------------------------------- rate limit


def test_the_fourth_proposal_in_a_minute_is_rate_limited(agent_tokens, tmp_path):
    with running_daemon(tmp_path, VETTED_PROPOSALS_PER_MINUTE="3") as daemon:
        token = agent_tokens["claude-code"]
        for n in range(3):
            status, _, data = api(
                daemon,
                "POST",
                "/proposals",
                token,
                body=proposal_body(title=f"Fact number {n}", body=f"{GOOD_BODY} Variant {n}.", confirm_duplicate=True),
            )
            assert status == 201, data
        status, headers, data = api(
            daemon, "POST", "/proposals", token, body=proposal_body(title="Fact number 3", confirm_duplicate=True)
        )
        assert status == 429, data
        assert data["error"] == "rate_limited"
        retry = int(headers["retry-after"])
        assert 1 <= retry <= 60 and data["retry_after"] == retry
        assert f"retry in {retry} s" in data["message"] and "3 proposals per minute" in data["message"]
        assert Proposal.objects.filter(agent__name="claude-code").count() == 3
        # The limit is per agent; reads have their own limit.
        assert (
            api(daemon, "POST", "/proposals", agent_tokens["team-bot"], body=proposal_body(confirm_duplicate=True))[0]
            == 201
        )
        assert api(daemon, "GET", "/describe", token)[0] == 200


# --------------------------------------------------------------------------- OpenAPI and docs

ENDPOINTS = {
    "/api/v1/describe": {"get"},
    "/api/v1/search": {"get"},
    "/api/v1/records": {"get"},
    "/api/v1/records/{record_id}": {"get"},
    "/api/v1/records/{record_id}/dispute": {"post"},
    "/api/v1/records/{record_id}/retirement": {"post"},
    "/api/v1/proposals": {"post"},
    "/api/v1/proposals/{proposal_id}": {"get"},
    "/api/v1/proposals/{proposal_id}/withdrawal": {"post"},
    "/api/v1/quality": {"get"},
}


def test_the_openapi_schema_is_valid_and_lists_every_endpoint(gateway, transactional_db):
    from drf_spectacular.validation import validate_schema

    status, headers, schema = http("GET", gateway.base + API + "/schema?format=json")
    assert status == 200 and headers["content-type"].startswith("application/vnd.oai.openapi+json")
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)  # drf-spectacular's JSON-schema check of OpenAPI 3.0
    paths = {path: set(ops) - {"parameters"} for path, ops in schema["paths"].items()}
    assert paths == ENDPOINTS
    assert "agentToken" in schema["components"]["securitySchemes"]
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            assert {"agentToken": []} in op["security"], (path, method)
            assert "401" in op["responses"], (path, method)
    assert "201" in schema["paths"]["/api/v1/proposals"]["post"]["responses"]
    assert "409" in schema["paths"]["/api/v1/proposals"]["post"]["responses"]
    # YAML (the default) is served too.
    status, headers, text = http("GET", gateway.base + API + "/schema")
    assert status == 200 and "openapi: 3." in text


def test_schema_generation_has_no_warnings():
    import subprocess
    import sys

    from tests.gateway_support import PROJECT

    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_swagger_ui_uses_only_local_assets(gateway, transactional_db):
    status, headers, page = http("GET", gateway.base + API + "/docs")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "swagger" in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "external asset"
    assert "cdn" not in page.lower()
    assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", page)
    # The page's own script is a file too (?script, so the CSP needs no inline script); it names the schema.
    own_script = API + "/docs?script="
    assert assets and all(a.startswith("/static/") or a == own_script for a in assets), assets
    for asset in assets:
        assert http("GET", gateway.base + asset)[0] == 200, asset
    assert "/api/v1/schema" in http("GET", gateway.base + own_script)[2]


# --------------------------------------------------------------------------- documented response shapes


def test_responses_carry_the_documented_keys(gateway, agent_tokens, reviewer):
    token = agent_tokens["claude-code"]
    record = approved(reviewer)

    status, _, data = api(gateway, "GET", "/describe", token)
    assert status == 200
    assert_documented(data, s.DescribeSerializer)
    for group, serializer in (
        ("spaces", s.SpaceSummarySerializer),
        ("kinds", s.NamedCountSerializer),
        ("tags", s.NamedCountSerializer),
    ):
        for item in data[group]:
            assert_documented(item, serializer)

    status, _, data = api(gateway, "GET", "/search?q=billing+repository", token)
    assert status == 200 and data["results"]
    assert_documented(data, s.SearchSerializer)
    for hit in data["results"]:
        assert_documented(hit, s.HitSerializer)

    status, _, data = api(gateway, "GET", "/records", token)
    assert status == 200 and data["records"]
    assert_documented(data, s.ListSerializer)
    for item in data["records"]:
        assert_documented(item, s.SummarySerializer)

    status, _, data = api(gateway, "GET", f"/records/{record.public_id}", token)
    assert_documented(data, s.ReadSerializer)
    assert_documented(data["record"], s.RecordSerializer)

    status, _, data = api(
        gateway, "POST", "/proposals", token, body=proposal_body(body=GOOD_BODY.replace("weekday", "workday"))
    )
    assert status == 409
    assert_documented(data, s.SimilarExistsSerializer)
    for item in data["similar"]:
        assert_documented(item, s.SimilarSerializer)

    status, _, data = api(
        gateway,
        "POST",
        "/proposals",
        token,
        body=proposal_body(
            title="Office plants", body="The office plants are watered every Monday by whoever arrives first."
        ),
    )
    assert status == 201
    assert_documented(data, s.ProposalCreatedSerializer)
    assert_documented(data["proposal"], s.ProposalSerializer)
    status, _, data = api(gateway, "GET", f"/proposals/{data['proposal_id']}", token)
    assert_documented(data, s.ProposalSerializer)

    for status_wanted, method, path, body in [
        (400, "POST", "/proposals", {"title": ""}),
        (401, "GET", "/describe", None),
        (404, "GET", "/records/rec_0123456789ab", None),
        (409, "POST", "/proposals", proposal_body()),
    ]:
        status, _, data = api(gateway, method, path, None if status_wanted == 401 else token, body=body)
        assert status == status_wanted, data
        assert_documented(data, s.ErrorSerializer)
