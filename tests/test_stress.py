"""The short stress run (the long one is `manage.py stress --agents 8
--seconds 120`, reported in the issue notes): the real daemon, agent
processes over REST and MCP, a reviewer deciding through the actions."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
from django.db import connection

from tests.gateway_support import PROJECT

# serial: the stress run loads every core on purpose (a daemon, agent
# processes, a reviewer); beside other tests it would measure them, not Vetted.
pytestmark = [pytest.mark.slow, pytest.mark.serial]


def _stress(*args: str) -> str:
    """`manage.py stress ARGS --embedder fake` in a fresh VETTED_HOME (on
    PostgreSQL, its scratch database on VETTED_DATABASE_URL's server); its
    report, checked to pass with every kind of call exercised."""
    home = tempfile.mkdtemp(prefix="vetted-stress-")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_HOME": home}
    env.pop("VETTED_DB_PATH", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "stress", *args, "--embedder", "fake"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "all checks passed" in result.stdout, output[-4000:]
    assert "FAIL" not in result.stdout
    for operation in ("propose_rest", "propose_mcp", "search_rest", "search_mcp", "accept", "reject"):
        assert operation in result.stdout  # every kind of call was exercised
    return result.stdout


def test_four_agents_for_fifteen_seconds_lose_nothing():
    _stress("--agents", "4", "--seconds", "15")


@pytest.mark.postgres_slow
@pytest.mark.skipif(connection.vendor != "postgresql", reason="several daemons need PostgreSQL (the serve lock)")
def test_two_daemons_on_one_database_for_ten_seconds_lose_nothing():
    """`stress --daemons 2` (docs/postgres.md, "Several daemons"): each agent on one of
    two daemons over one scratch database on the test server; the same
    checks (nothing lost or doubled, one current version per chain, a clean
    index). The two-minute run is in docs/benchmarks.md."""
    output = _stress("--daemons", "2", "--agents", "4", "--seconds", "10")
    assert "2 daemon(s) on postgresql" in output, output[-4000:]
