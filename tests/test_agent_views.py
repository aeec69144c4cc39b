"""Agents page (create with the token shown once, revoke) and the settings/health page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from reviews import actions
from reviews.models import Agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, reviewer):
    client.force_login(reviewer)
    return client


def test_agents_lists_last_seen_and_decision_counts(signed_in, reviewer, agent, record):
    proposal = actions.propose_retirement(record, agent=agent, reason="The repository was archived")
    actions.reject_proposal(proposal, actor=reviewer, note="Still used")
    response = signed_in.get(reverse("agents"))
    row = next(a for a in response.context["agents"] if a.name == "claude-code")
    assert row.accepted == 1 and row.rejected == 1 and row.pending == 0
    html = response.content.decode()
    assert "claude-code" in html and "never" in html


def test_create_agent_shows_the_token_once(signed_in):
    response = signed_in.post(reverse("agent_create"), {"name": "codex", "spaces": ["team"], "source_tool": "codex"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    token = response.context["token"]
    assert token.startswith("vt_") and token in response.content.decode()
    assert 'id="token-panel"' in response.content.decode()
    agent = Agent.objects.get(name="codex")
    assert agent.spaces == ["team"]
    # Never again:
    assert token not in signed_in.get(reverse("agents")).content.decode()


def test_the_token_panel_shows_a_copyable_config_block_for_every_client(signed_in):
    import json

    response = signed_in.post(reverse("agent_create"), {"name": "laptop", "spaces": ["personal", "team"]})
    token = response.context["token"]
    html = response.content.decode()
    for client in ("claude-code", "claude-desktop", "codex", "cursor"):
        assert f'id="snippet-{client}"' in html
    cursor = next(s for s in response.context["snippets"] if s["client"] == "cursor")
    entry = json.loads(cursor["text"])["mcpServers"]["vetted"]
    from common.clients import stdio_command

    assert [entry["command"], *entry["args"]] == stdio_command()
    assert entry["env"]["VETTED_TOKEN"] == token
    assert actions.agent_for_token(token).name == "laptop"


def test_create_agent_with_bad_input_shows_field_errors(signed_in, agent):
    response = signed_in.post(reverse("agent_create"), {"name": "claude-code", "spaces": []})
    assert response.status_code == 400
    assert set(response.context["errors"]) == {"name", "spaces"}


def test_revoke_agent(signed_in, agent):
    response = signed_in.post(reverse("agent_revoke", args=[agent.name]), follow=True)
    assert "Revoked claude-code" in response.content.decode()
    agent.refresh_from_db()
    assert agent.is_active is False
    again = signed_in.post(reverse("agent_revoke", args=[agent.name]), follow=True)
    assert "already revoked" in again.content.decode()


def test_settings_page_shows_model_index_database_and_backup(signed_in, record):
    response = signed_in.get(reverse("site_settings"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Embedding model" in html and "manage.py backup" in html
    assert response.context["report"].records == 1
    assert response.context["db_size"] > 0
