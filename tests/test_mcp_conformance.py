"""The official MCP conformance suite (npm @modelcontextprotocol/conformance,
0.1.12: the newest that runs on Node 20) against the running daemon.

The suite cannot send an Authorization header, so it talks to /mcp through
a loopback proxy that adds an agent token and changes nothing else (Host
and Origin pass through, so dns-rebinding-protection tests the daemon's own
checks)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.gateway_support import token_injecting_proxy

pytestmark = pytest.mark.slow

PACKAGE = "@modelcontextprotocol/conformance@0.1.12"
SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]


@pytest.fixture(scope="module")
def npx():
    path = shutil.which("npx")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("npx (Node.js 20+) is required in CI for the MCP conformance suite")
        pytest.skip("npx (Node.js 20+) is not installed; the conformance suite needs it")
    return path


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario_passes(npx, gateway, agent_tokens, scenario, tmp_path):
    with token_injecting_proxy(gateway.base, agent_tokens["claude-code"]) as proxy:
        result = subprocess.run(
            [npx, "--yes", PACKAGE, "server", "--url", f"{proxy}/mcp", "--scenario", scenario, "-o", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", output)
    assert summary, output[-4000:]
    passed, total, failed, warnings = map(int, summary.groups())
    assert passed == total > 0 and failed == warnings == 0, output[-4000:]
