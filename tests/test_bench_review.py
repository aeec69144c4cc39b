"""`manage.py bench_review` seeds a scratch database, reviews it in Chromium and prints its table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"), reason="/usr/bin/chromium is missing"),
]


def test_bench_review_decides_every_kind_and_prints_the_table(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "VETTED_HOME": str(tmp_path),
        "VETTED_EMBEDDER": "fake",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "bench_review", "--proposals", "6"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "6 proposals decided at 390x844" in out
    for plan in ("accept by tap", "accept by keys", "reject with a note by keys", "correct a dispute by keys"):
        assert plan in out, out
    assert "undo the last decision by key" in out and "retire a record by tap" in out
    assert "decision (POST)" in out and "wholly inside the first screen, compact view:" in out
    # The scratch database only: the real one was never created.
    assert not (tmp_path / "vetted.sqlite3").exists()
