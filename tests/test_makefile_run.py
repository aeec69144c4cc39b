"""`make run` while Vetted already runs: says where, at once, and ends 0; a
real failure (the port taken by another program) still fails through make.

The recipe runs as a person runs it, with its install step already done:
VENV points at a folder whose stamp is newer than pyproject.toml and whose
bin/python hands over to this interpreter, so make installs nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("make") is None, reason="needs make"),
]


@pytest.fixture
def venv(tmp_path):
    folder = tmp_path / "venv"
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    stamp = folder / ".installed"
    stamp.touch()
    later = (ROOT / "pyproject.toml").stat().st_mtime + 60
    os.utime(stamp, (later, later))  # newer than pyproject.toml: make sees nothing to install
    return folder


def make_run(venv: Path, home: Path, port: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "VETTED_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("MAKEFLAGS", None)
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "run", f"VENV={venv}", f"PORT={port}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_second_make_run_says_where_vetted_runs_and_ends_0(venv, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with socket.socket() as taken:  # the running daemon's port
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # This test's own pid stands for the daemon: alive, and named in its record.
        record = {"host": "127.0.0.1", "port": port, "pid": os.getpid(), "state": "listening", "started": 0}
        (home / "serve.json").write_text(json.dumps(record))
        done = make_run(venv, home, port)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Vetted is already running for {home}: http://127.0.0.1:{port}/ (pid {os.getpid()}" in done.stderr
    assert "Error 4" not in done.stderr and "***" not in done.stderr
    assert "migration" not in done.stderr.lower() and "Traceback" not in done.stderr


def test_make_run_still_fails_when_another_program_holds_the_port(venv, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = make_run(venv, home, port)
    assert done.returncode != 0
    assert f"Port {port} on 127.0.0.1 is in use by another program" in done.stderr
    assert "Error 1" in done.stderr  # make's own line: the failure is not hidden
