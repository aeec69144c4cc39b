"""One side of a side-by-side benchmark: a checkout of Vetted (this tree, or
an older commit in a temporary git worktree) set up and run only through its
own command line and daemon, so an older layout needs no change.

Each side gets its own VETTED_HOME, its own SQLite file and its own port; both
use this process's Python (the venv), with PYTHONPATH pointing at the
checkout so its own code is imported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mcp_bridge.daemon_process import free_port, start_serve, wait_for_health


class SideFailed(RuntimeError):
    """A checkout's command failed; the message names the command and shows its output."""


def git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True)
    if done.returncode:
        raise SideFailed(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


@dataclass
class Side:
    label: str
    checkout: Path
    home: Path
    embedder: str | None  # None: the checkout's own default
    model_cache: Path | None = None  # an ONNX export to copy in, so neither side pays for one
    port: int = 0
    token: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    process: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        # Nothing of the caller's Vetted settings leaks in (a test's database,
        # another home): only what this side is given.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VETTED_", "DJANGO_"))}
        env.update(
            {
                "PYTHONPATH": str(self.checkout),
                "DJANGO_SETTINGS_MODULE": "memory_site.settings",
                "VETTED_HOME": str(self.home),
                "VETTED_PROPOSALS_PER_MINUTE": "0",
                "VETTED_READS_PER_MINUTE": "0",
                "VETTED_MCP_INITIALIZE_PER_MINUTE": "0",
                "DJANGO_SUPERUSER_PASSWORD": "bench-only-password-1234",
            }
        )
        if self.embedder:
            # Older checkouts know torch only by its first name; newer ones accept both.
            env["VETTED_EMBEDDER"] = "sentence-transformers" if self.embedder == "torch" else self.embedder
        return env

    def manage(self, *args: str, stdin_path: Path | None = None) -> str:
        """Run ``manage.py ARGS`` of this checkout; its standard output."""
        with open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb") as stdin:
            done = subprocess.run(
                [sys.executable, str(self.checkout / "manage.py"), *args],
                cwd=self.checkout,
                env=self.env(),
                stdin=stdin,
                capture_output=True,
                text=True,
            )
        if done.returncode:
            raise SideFailed(
                f"{self.label}: manage.py {' '.join(args)} failed:\n{(done.stderr or done.stdout)[-2000:]}"
            )
        return done.stdout

    def build(self, corpus: Path, older: Path | None = None) -> None:
        """A fresh database holding ``corpus`` (JSON Lines) approved, and an
        agent reading every space. ``older``: the same corpus under the key an
        older checkout reads, imported when this one's import refuses the new key."""
        self.home.mkdir(parents=True, exist_ok=True)
        if self.model_cache is not None and self.model_cache.is_dir():
            shutil.copytree(self.model_cache, self.home / self.model_cache.name, dirs_exist_ok=True)
        t0 = time.perf_counter()
        self.manage("migrate", "--noinput")
        self.manage("createsuperuser", "--noinput", "--username", "bench", "--email", "bench@example.invalid")
        self.timings["setup s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            self.manage("import_records", str(corpus), "--approve")
        except SideFailed as exc:
            if older is None or "space: unknown field" not in str(exc):
                raise
            # A checkout from before `scope` was renamed `space` (51a1491, the
            # last round's) refuses the new key; its import is all or nothing.
            self.manage("import_records", str(older), "--approve")
        self.timings["import s"] = time.perf_counter() - t0
        try:
            made = self.manage("create_agent", "bench", "--spaces", "personal,team,system")
        except SideFailed as exc:
            if "--scopes" not in str(exc):
                raise
            made = self.manage("create_agent", "bench", "--scopes", "personal,team,system")  # before the rename
        lines = made.strip().splitlines()
        if not lines:
            raise SideFailed(f"{self.label}: create_agent printed no token")
        self.token = lines[-1].strip()

    def start(self, index_timeout: float) -> None:
        """Start the daemon and wait until it answers: `serve` embeds every
        record not yet indexed before it listens, so this also times the index."""
        self.port = free_port()
        log = self.home / "serve.log"
        t0 = time.perf_counter()
        self.process = start_serve(self.checkout, self.env(), self.port, log)
        wait_for_health(self.base, self.process, timeout=index_timeout, log_path=log)
        self.timings["start + index s"] = time.perf_counter() - t0

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
