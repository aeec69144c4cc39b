"""`manage.py bench_edited_count` runs in its own process against a scratch database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_bench_edited_count_prints_the_table_and_agrees_with_the_full_pass(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "VETTED_HOME": str(tmp_path),
        "VETTED_EMBEDDER": "fake",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "bench_edited_count", "--records", "50", "--runs", "2"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]  # it fails when the count and the full pass disagree
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("50 live records, 5 changed outside Vetted")
    assert "median ms" in lines[1]
    assert [line.split("  ")[0] for line in lines[2:]] == [
        "full pass (before)",
        "count, nothing new",
        "count, one new edit",
        "nav_counts()",
    ]
