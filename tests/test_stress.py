"""The short stress run (the long one is `manage.py stress --agents 8
--seconds 120`, reported in the issue notes): the real daemon, agent
processes over REST and MCP, a reviewer deciding through the actions."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from tests.gateway_support import PROJECT

pytestmark = pytest.mark.slow


def test_four_agents_for_fifteen_seconds_lose_nothing():
    home = tempfile.mkdtemp(prefix="vetted-stress-")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_HOME": home}
    env.pop("VETTED_DB_PATH", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "stress", "--agents", "4", "--seconds", "15", "--embedder", "fake"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "all checks passed" in result.stdout
    assert "FAIL" not in result.stdout
    for operation in ("propose_rest", "propose_mcp", "search_rest", "search_mcp", "accept", "reject"):
        assert operation in result.stdout  # every kind of call was exercised
