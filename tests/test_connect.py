"""`manage.py connect`: the config block per client, tokens, and --write."""

from __future__ import annotations

import io
import json
import os
import re

import pytest
import tomlkit
from django.core.management import call_command
from django.core.management.base import CommandError

from common.clients import stdio_command
from mcp_bridge.connect import CLIENTS
from reviews import actions
from reviews.errors import Unauthorized
from reviews.models import Agent, AuditEvent

pytestmark = pytest.mark.django_db

MANAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "manage.py")


def connect(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("connect", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def block(output: str, fmt: str) -> dict:
    """The config block: from the first '{' / '[' line to the first blank line."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("{" if fmt == "json" else "["))
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    text = "\n".join(lines[start:end])
    return json.loads(text) if fmt == "json" else tomlkit.parse(text).unwrap()


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_each_client_gets_a_stdio_block_with_absolute_paths_and_a_working_token(client, reviewer):
    out, err = connect(client, "--agent", f"laptop-{client}")
    spec = CLIENTS[client]
    entry = block(out, spec.fmt)["mcpServers" if spec.fmt == "json" else "mcp_servers"]["vetted"]
    assert [entry["command"], *entry["args"]] == stdio_command() and os.path.isabs(entry["command"])
    token = entry["env"]["VETTED_TOKEN"]
    assert actions.agent_for_token(token).name == f"laptop-{client}"
    assert os.path.isabs(entry["env"]["VETTED_HOME"])
    agent = Agent.objects.get(name=f"laptop-{client}")
    assert agent.spaces == ["personal", "team"] and agent.source_tool == client
    assert "call `describe` once" in out and "propose_context" in out  # the global instructions
    assert "Created agent" in err and token not in err


def test_http_blocks_carry_the_url_and_the_header_where_supported(reviewer):
    out, _ = connect("cursor", "--agent", "cursor-http", "--http", "--url", "http://127.0.0.1:9000/")
    entry = block(out, "json")["mcpServers"]["vetted-http"]
    assert entry["url"] == "http://127.0.0.1:9000/mcp" and entry["headers"]["Authorization"].startswith("Bearer vt_")

    out, _ = connect("claude-code", "--agent", "cc-http", "--http")
    assert block(out, "json")["mcpServers"]["vetted-http"]["type"] == "http"
    assert "claude mcp add-json vetted-http " in out

    out, _ = connect("codex", "--agent", "codex-http", "--http")
    assert block(out, "toml")["mcp_servers"]["vetted-http"] == {
        "url": "http://127.0.0.1:8765/mcp",
        "bearer_token_env_var": "VETTED_TOKEN",
    }
    assert "export VETTED_TOKEN=vt_" in out

    with pytest.raises(CommandError, match="Claude Desktop cannot send a bearer header"):
        connect("claude-desktop", "--agent", "desk-http", "--http")


def test_an_existing_agent_needs_its_token_or_a_rotation(reviewer):
    out, _ = connect("cursor", "--agent", "again")
    first = block(out, "json")["mcpServers"]["vetted"]["env"]["VETTED_TOKEN"]
    with pytest.raises(CommandError, match="keeps only a digest"):
        connect("cursor", "--agent", "again")

    out, _ = connect("cursor", "--agent", "again", "--token", first)
    assert block(out, "json")["mcpServers"]["vetted"]["env"]["VETTED_TOKEN"] == first

    _other, other_token = actions.create_agent("someone-else", spaces=["team"], actor=reviewer)
    with pytest.raises(CommandError, match="belongs to agent 'someone-else'"):
        connect("cursor", "--agent", "again", "--token", other_token)

    out, err = connect("cursor", "--agent", "again", "--rotate")
    second = block(out, "json")["mcpServers"]["vetted"]["env"]["VETTED_TOKEN"]
    assert second != first and "old one no longer works" in err
    with pytest.raises(Unauthorized):
        actions.agent_for_token(first)
    assert (
        AuditEvent.objects.filter(
            event_type="agent.token_rotated", subject_id=Agent.objects.get(name="again").public_id
        ).count()
        == 1
    )


def test_write_merges_into_json_keeping_other_servers_and_backs_up(reviewer, tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}, "theme": "dark"}))
    _out, err = connect("cursor", "--agent", "writer", "--write", "--config", str(config))
    data = json.loads(config.read_text())
    assert data["theme"] == "dark" and data["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert [data["mcpServers"]["vetted"]["command"], *data["mcpServers"]["vetted"]["args"]] == stdio_command()
    backups = list(tmp_path.glob("mcp.json.bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text())["theme"] == "dark"
    assert oct(config.stat().st_mode & 0o777) == "0o600"  # it holds a token
    assert "Wrote the 'vetted' server" in err


def test_write_merges_into_toml_keeping_comments(reviewer, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('# my settings\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    connect("codex", "--agent", "codex-writer", "--write", "--config", str(config))
    text = config.read_text()
    assert text.startswith("# my settings") and 'model = "o4"' in text
    data = tomlkit.parse(text).unwrap()
    assert data["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert [data["mcp_servers"]["vetted"]["command"], *data["mcp_servers"]["vetted"]["args"]] == stdio_command()


def test_write_refuses_a_broken_config_without_touching_it(reviewer, tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text("{not json")
    with pytest.raises(CommandError, match="is not valid JSON"):
        connect("cursor", "--agent", "careful", "--write", "--config", str(config))
    assert config.read_text() == "{not json"
    assert not Agent.objects.filter(name="careful").exists()  # no token issued for nothing


def test_codex_over_http_is_told_exactly_where_the_token_goes(reviewer, monkeypatch):
    monkeypatch.setenv("SHELL", "/bin/zsh")
    out, _ = connect("codex", "--agent", "codex-zsh", "--http")
    token = re.search(r"^export VETTED_TOKEN=(vt_\S+)$", out, re.M).group(1)
    assert actions.agent_for_token(token).name == "codex-zsh"
    assert "add this line to ~/.zshrc" in out and "refuses one written in config.toml" in out
    assert 'env_http_headers = { "Authorization" = "VETTED_AUTHORIZATION" }' in out
    assert f'VETTED_AUTHORIZATION="Bearer {token}"' in out
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    out, _ = connect("codex", "--agent", "codex-fish", "--http")
    assert "~/.config/fish/config.fish" in out and re.search(r"^set -gx VETTED_TOKEN vt_", out, re.M)


@pytest.mark.parametrize("client, fmt", [("claude-code", "json"), ("codex", "toml"), ("generic", "json")])
def test_stdio_and_http_entries_have_different_names_and_install_side_by_side(client, fmt, reviewer, tmp_path):
    config = tmp_path / f"config.{fmt}"
    connect(client, "--agent", f"{client}-both", "--write", "--config", str(config))
    out, err = connect(client, "--agent", f"{client}-both-http", "--http", "--write", "--config", str(config))
    assert "(server name 'vetted-http')" in out and "Wrote the 'vetted-http' server" in err
    text = config.read_text()
    servers = json.loads(text)["mcpServers"] if fmt == "json" else tomlkit.parse(text).unwrap()["mcp_servers"]
    assert set(servers) == {"vetted", "vetted-http"}
    assert "command" in servers["vetted"] and servers["vetted-http"]["url"].endswith("/mcp")


def test_a_generic_client_gets_the_common_block_and_needs_a_path_to_write(reviewer):
    out, _ = connect("generic", "--agent", "inspector", "--http")
    assert "your MCP client's config (its mcpServers object)" in out
    assert block(out, "json")["mcpServers"]["vetted-http"]["headers"]["Authorization"].startswith("Bearer vt_")
    with pytest.raises(CommandError, match="needs --config PATH"):
        connect("generic", "--agent", "inspector-2", "--write")


@pytest.mark.parametrize("client, fmt", [("claude-code", "json"), ("codex", "toml"), ("cursor", "json")])
def test_both_writes_the_stdio_and_http_entries_with_one_token_in_one_write(client, fmt, reviewer, tmp_path):
    config = tmp_path / f"config.{fmt}"
    config.write_text("{}\n" if fmt == "json" else "")
    out, err = connect(client, "--agent", f"{client}-two", "--both", "--write", "--config", str(config))
    assert "(server names 'vetted', 'vetted-http')" in out
    assert "Wrote the 'vetted', 'vetted-http' servers" in err
    text = config.read_text()
    servers = json.loads(text)["mcpServers"] if fmt == "json" else tomlkit.parse(text).unwrap()["mcp_servers"]
    assert set(servers) == {"vetted", "vetted-http"}
    token = servers["vetted"]["env"]["VETTED_TOKEN"]
    assert actions.agent_for_token(token).name == f"{client}-two"
    if client == "codex":  # Codex reads the HTTP token from its environment: the same token
        assert servers["vetted-http"]["bearer_token_env_var"] == "VETTED_TOKEN"
        assert f"export VETTED_TOKEN={token}" in out
    else:
        assert servers["vetted-http"]["headers"]["Authorization"] == f"Bearer {token}"
    assert len(list(tmp_path.glob(f"config.{fmt}.bak-*"))) == 1  # one write, one backup of the file as it was
    assert Agent.objects.filter(name=f"{client}-two").count() == 1


def test_the_message_says_how_to_rotate_the_token(reviewer):
    _out, err = connect("cursor", "--agent", "rotatable", "--both")
    assert "vetted connect cursor --agent rotatable --rotate --both" in err
    assert "old token stops working at once" in err


def test_an_existing_agent_is_told_both_gets_the_other_entry(reviewer):
    connect("cursor", "--agent", "half")
    with pytest.raises(CommandError, match="pass --both"):
        connect("cursor", "--agent", "half", "--http")
    out, _ = connect("cursor", "--agent", "half", "--rotate", "--both")
    assert set(block(out, "json")["mcpServers"]) == {"vetted", "vetted-http"}


def test_both_is_refused_before_a_token_for_a_client_without_http(reviewer):
    with pytest.raises(CommandError, match="stdio bridge only \\(drop --both\\)"):
        connect("claude-desktop", "--agent", "desk-both", "--both")
    assert not Agent.objects.filter(name="desk-both").exists()
