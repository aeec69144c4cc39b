"""The empty inbox and the agents page say how to connect an agent: the
`connect` command on this machine, and the OAuth URL for remote clients."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.django_db


def page(client, reviewer, path: str) -> str:
    client.force_login(reviewer)
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("path", ["/", "/agents/"])
def test_the_empty_inbox_and_the_agents_page_show_the_connect_command_and_the_oauth_url(client, reviewer, path):
    text = page(client, reviewer, path)
    assert 'id="connect-help"' in text
    assert f"{sys.executable} manage.py connect claude-code --agent claude-code-laptop --write" in text
    assert "sign in with OAuth: add the server URL <code>http://127.0.0.1:8765/mcp</code>" in text
    assert "set <code>VETTED_PUBLIC_URL</code>" in text  # a loopback URL: say how to reach it from elsewhere


def test_the_oauth_url_comes_from_vetted_public_url(client, reviewer, settings):
    settings.VETTED_PUBLIC_URL = "https://vetted.example.com"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    text = page(client, reviewer, "/agents/")
    assert "<code>https://vetted.example.com/mcp</code>" in text
    assert "set <code>VETTED_PUBLIC_URL</code>" not in text


def test_an_inbox_with_proposals_does_not_show_it(client, reviewer, agent):
    from mcp_bridge import agent_api
    from tests.conftest import GOOD_BODY

    agent_api.propose_context(
        agent, title="Billing deploys from main", body=GOOD_BODY, kind="fact", space="team", reason="Said today."
    )
    assert 'id="connect-help"' not in page(client, reviewer, "/")
