"""Claude Code's own health check (`claude mcp list`) against both
transports, configured by `manage.py connect --write`: the stdio bridge
(server `vetted`) and HTTP (`vetted-http`), side by side in one config.

Claude Code (npm `@anthropic-ai/claude-code`) is installed with the system
npm into a cache folder (VETTED_CLIENT_CACHE, default
~/.cache/vetted-test-clients) the first time; it runs in a throwaway HOME
and needs no API key for `mcp list`. Skipped, with the reason, when npm is
missing or the registry cannot be reached."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.slow

PACKAGE = "@anthropic-ai/claude-code@2"


@pytest.fixture(scope="module")
def claude() -> Path:
    cache = Path(os.environ.get("VETTED_CLIENT_CACHE") or Path.home() / ".cache" / "vetted-test-clients")
    prefix = cache / "claude-code"
    binary = prefix / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed, so Claude Code cannot be installed for this test")
        prefix.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", PACKAGE],
                capture_output=True,
                text=True,
                timeout=600,
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm install {PACKAGE} took over 10 minutes (registry unreachable?)")
        if done.returncode != 0 or not binary.exists():
            pytest.skip(f"npm install {PACKAGE} failed (registry unreachable?): {done.stderr.strip()[-300:]}")
    return binary


def test_claude_mcp_list_connects_over_stdio_and_http(claude, gateway, agent_tokens, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config = home / ".claude.json"
    token = agent_tokens["claude-code"]
    for transport in ([], ["--http"]):
        call_command(
            "connect",
            "claude-code",
            "--agent",
            "claude-code",
            "--token",
            token,
            "--url",
            gateway.base,
            *transport,
            "--write",
            "--config",
            str(config),
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # The stdio server's cold start (Django, the MCP SDK) is seconds when
        # quiet; at a load of 10 it outlasted the CLI's default startup wait
        # and was listed "Failed to connect". 60 s is the most the CLI honours.
        "MCP_TIMEOUT": "60000",
    }
    listed = subprocess.run(
        [str(claude), "mcp", "list"], env=env, cwd=home, capture_output=True, text=True, timeout=180
    )
    lines = {line.split(":", 1)[0]: line for line in listed.stdout.splitlines() if ":" in line}
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "✔ Connected" in lines.get("vetted", ""), listed.stdout + listed.stderr
    assert "✔ Connected" in lines.get("vetted-http", ""), listed.stdout + listed.stderr
    assert gateway.base + "/mcp (HTTP)" in lines["vetted-http"]
