"""Spaces: a personal record never appears in anything produced for the team
space. Both spaces are seeded with look-alike records (same topics, same
tags, contradicting details), plus personal history (a superseded version,
a dispute, a retirement, pending proposals), and every team output is
grepped for the personal markers."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from mcp_bridge import agent_api
from retrieval import quality
from retrieval.embeddings import FakeEmbedder
from reviews import actions

pytestmark = pytest.mark.django_db

# Every personal record carries one of these; none may leak.
PERSONAL_MARKERS = ("Zanzibar", "kumquat", "pers-only")


@pytest.fixture
def two_spaces(reviewer, agent, team_agent, make_record):
    team = [
        make_record(
            scope="team",
            title="Deploy window for billing",
            tags=["deploy", "billing"],
            body="The billing API deploys every Tuesday at 10:00 UTC after the standup.",
        ),
        make_record(
            scope="team",
            title="Code review rule",
            tags=["review"],
            body="Every pull request needs one approving review before merging into main.",
        ),
    ]
    personal = [
        make_record(
            scope="personal",
            title="Deploy window for billing (Zanzibar trip)",
            tags=["deploy", "billing", "pers-only"],
            body="I deploy the billing API every Thursday at 16:00 UTC, never while in Zanzibar.",
        ),
        make_record(
            scope="personal",
            title="Code review rule for kumquat",
            tags=["review", "pers-only"],
            body="My kumquat side project merges without any review, straight into main.",
        ),
        make_record(
            scope="personal",
            title="Old kumquat note",
            tags=["pers-only"],
            body="The kumquat project used to live on a Raspberry Pi under the desk.",
        ),
    ]
    actions.revise_record(
        personal[2], actor=reviewer, changes={"body": "The kumquat project moved to a VPS in Zanzibar."}
    )
    actions.dispute_record(personal[1], agent=agent, reason="kumquat merges now need a review too.")
    actions.propose_create(
        agent=agent,
        reason="Zanzibar trip notes from today.",
        kind="event",
        scope="personal",
        title="Zanzibar flight",
        body="The kumquat conference flight to Zanzibar leaves on Friday morning.",
        tags=["pers-only"],
    )
    return team, personal


def assert_clean(text: str, where: str) -> None:
    for marker in PERSONAL_MARKERS:
        assert marker.lower() not in text.lower(), f"{marker!r} leaked into {where}"


def test_team_search_describe_list_and_quality_show_no_personal_content(two_spaces, team_agent):
    for query in ("deploy billing Thursday", "kumquat review", "Zanzibar", "code review main"):
        for mode in ("keyword", "semantic", "hybrid"):
            answer = agent_api.search(team_agent, query, mode=mode)
            answer.pop("query")  # the query itself is echoed back
            assert_clean(json.dumps(answer), f"team search {query!r} ({mode})")
            assert not answer["withheld"], "personal records must not even be counted as withheld"
    assert_clean(json.dumps(agent_api.describe(team_agent)), "team describe")
    assert_clean(json.dumps(agent_api.list_records(team_agent, limit=100)), "team list")
    assert_clean(json.dumps(quality.run(["team"], embedder=FakeEmbedder()).as_dict()), "team quality report")
    out = io.StringIO()
    call_command("quality", "--scope", "team", "--json", stdout=out)
    assert_clean(out.getvalue(), "quality --scope team")


def test_team_describe_counts_only_team_records(two_spaces, team_agent):
    described = agent_api.describe(team_agent)
    assert [s["name"] for s in described["scopes"]] == ["team"]
    assert described["records_current"] == 2
    assert described["pending_proposals"] == {"yours": 0}
    assert "pers-only" not in {t["name"] for t in described["tags"]}


def test_team_markdown_export_has_no_personal_content(two_spaces, tmp_path):
    call_command(
        "export_markdown",
        str(tmp_path),
        "--scope",
        "team",
        "--include-history",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len([p for p in files if p.suffix == ".md"]) == 2
    for path in files:
        assert_clean(path.read_text(encoding="utf-8"), f"team Markdown export {path.name}")


def test_team_json_export_has_no_personal_content(two_spaces, tmp_path):
    target = tmp_path / "team.json"
    call_command("export_json", str(target), "--scope", "team", stdout=io.StringIO(), stderr=io.StringIO())
    text = target.read_text(encoding="utf-8")
    assert_clean(text, "team JSON export")
    data = json.loads(text)
    assert {r["scope"] for r in data["records"]} == {"team"}


def test_personal_content_is_there_for_a_personal_reader(two_spaces, agent):
    # The markers are real: the same outputs for the personal space do contain them.
    answer = agent_api.search(agent, "kumquat", mode="keyword")
    assert "kumquat" in json.dumps(answer).lower()


def test_moving_a_record_is_the_only_way_into_the_team_space(two_spaces, reviewer, team_agent):
    _team, personal = two_spaces
    assert "Zanzibar" not in json.dumps(agent_api.search(team_agent, "deploy billing Thursday", mode="keyword"))
    moved = actions.move_record(personal[0], actor=reviewer, scope="team", note="Now the team's rule too.")
    found = agent_api.search(team_agent, "deploy billing Thursday", mode="keyword")
    assert moved.public_id in [hit["id"] for hit in found["results"]]
    read = agent_api.read(team_agent, moved.public_id)
    assert read["record"]["supersedes"] is None  # the personal predecessor's id does not cross either


def test_describe_counts_only_what_search_can_deliver(two_spaces, team_agent):
    from django.db import connection

    team, _personal = two_spaces
    before = agent_api.describe(team_agent)
    with connection.cursor() as cursor:  # edited outside Vetted: search withholds it, describe must not count it
        cursor.execute("UPDATE reviews_record SET body = body || ' (tampered)' WHERE id = %s", [team[0].pk])
    after = agent_api.describe(team_agent)
    assert after["records_current"] == before["records_current"] - 1
    assert {t["name"] for t in after["tags"]} == {t["name"] for t in before["tags"]} - {"deploy", "billing"}
