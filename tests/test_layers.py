"""The layering holds: `lint-imports` checks the contracts in pyproject.toml
(one layers contract, devtools > memory_site > inbox | mcp_bridge >
portability > retrieval > notify > reviews > common, with the inbox and the
gateway independent; the stdio bridge imports neither Django, torch, numpy
nor the MCP SDK; the command line imports no command)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


@pytest.mark.slow  # runs lint-imports (also part of `make check`)
def test_every_import_contract_is_kept():
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_no_app_module_is_above_400_lines():
    """Small modules: retrieval/ is measured by its own owner, migrations are generated."""
    too_long = []
    for package in (
        "common",
        "dbengine",
        "reviews",
        "inbox",
        "portability",
        "mcp_bridge",
        "memory_site",
        "notify",
        "devtools",
    ):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            lines = path.read_text(encoding="utf-8").count("\n")
            if lines > 400:
                too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not too_long, too_long
