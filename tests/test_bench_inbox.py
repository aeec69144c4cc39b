"""`manage.py bench_inbox` runs in its own process against a scratch database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_bench_inbox_prints_the_table_and_leaves_the_real_database_alone(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "VETTED_HOME": str(tmp_path),
        "VETTED_EMBEDDER": "fake",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "bench_inbox", "--proposals", "40", "--renders", "3"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("seeded 40 pending proposals")
    assert "median ms" in lines[1] and "queries" in lines[1]
    first = lines[2].split()
    assert lines[2].startswith("inbox (first page)") and first[-2] == "25"  # one page of cards
    assert not (tmp_path / "vetted.sqlite3").exists() or (tmp_path / "vetted.sqlite3").stat().st_size == 0
