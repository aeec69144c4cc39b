"""The repository stays light: what a script can make again (model weights,
ONNX exports, embedding caches, data sets, databases, dumps) is made by the
script, never committed. One whole round of work was once refused because a
model file had been committed and removed again: a submission's diffs count a
file added and later removed twice, and are capped."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Runs `git ls-files` (a process, about 10 ms); in `make test`, not the inner loop.
pytestmark = pytest.mark.slow

# The largest files committed on purpose are under 800 KB (a migrated SQLite
# file from an earlier version, the vendored axe-core, page screenshots).
LARGEST_FILE = 1024 * 1024
# The whole tree was 8.5 MB when this was written.
WHOLE_TREE = 32 * 1024 * 1024
# Suffixes of things a script makes again; none belongs in the repository.
GENERATED = (".onnx", ".safetensors", ".bin", ".pt", ".pth", ".npy", ".npz", ".pkl", ".dump", ".tar", ".zip", ".gz")


def _tracked() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    return [ROOT / name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def test_no_tracked_file_is_larger_than_a_megabyte():
    too_big = [f"{p.relative_to(ROOT)}: {p.stat().st_size:,} B" for p in _tracked() if p.stat().st_size > LARGEST_FILE]
    assert not too_big, f"make these with a script instead of committing them: {too_big}"


def test_the_whole_tree_stays_small():
    total = sum(p.stat().st_size for p in _tracked())
    assert total <= WHOLE_TREE, f"tracked files add up to {total:,} bytes (limit {WHOLE_TREE:,})"


def test_no_model_weights_caches_or_archives_are_tracked():
    found = [str(p.relative_to(ROOT)) for p in _tracked() if p.name.lower().endswith(GENERATED)]
    assert not found, f"generated files are made by a script, not committed: {found}"
