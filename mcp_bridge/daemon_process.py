"""Starting a daemon from a command or a test: a free loopback port and
waiting for its /health (standard library only)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


class DaemonFailed(RuntimeError):
    """The daemon exited or never answered /health; the message says which and shows its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(
    project: Path, env: dict[str, str], port: int, log_path: Path, *, append: bool = False, args: tuple[str, ...] = ()
) -> subprocess.Popen:
    """`manage.py serve --port PORT [ARGS]` in ``project`` with ``env``, its output
    in ``log_path`` (appended to with ``append``, as a restart does). Returns
    at once; call wait_for_health before using it."""
    with open(log_path, "ab" if append else "wb") as log:
        return subprocess.Popen(
            [sys.executable, str(Path(project) / "manage.py"), "serve", "--port", str(port), *args],
            cwd=project,
            env=env,
            stdout=log,
            stderr=log,
        )


def stress_argv(role: str, **options: object) -> list[str]:
    """The command line of one `python -m devtools.stress ROLE` load
    process: each keyword becomes ``--name-with-dashes VALUE``."""
    argv = [sys.executable, "-m", "devtools.stress", role]
    for name, value in options.items():
        argv += ["--" + name.replace("_", "-"), str(value)]
    return argv


def wait_for_health(base: str, process: subprocess.Popen, timeout: float = 180, log_path: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DaemonFailed(f"serve exited with {process.returncode}" + _tail(log_path))
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise DaemonFailed(f"serve did not answer {base}/health within {timeout:.0f} s" + _tail(log_path))


def _tail(log_path: Path | None) -> str:
    if log_path is None or not Path(log_path).exists():
        return ""
    return ":\n" + Path(log_path).read_text(errors="replace")[-2000:]
