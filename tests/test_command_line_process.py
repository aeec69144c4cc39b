"""`vetted` as its own process: what a command that does not serve imports
at start-up, and `serve --background` with `status` and `stop` around a real
daemon. Run as `python -m memory_site.command_line`, which is what the
installed `vetted` script calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common import listening
from mcp_bridge.daemon_process import free_port

PROJECT = Path(__file__).resolve().parent.parent
HEAVY = ("mcp", "torch", "numpy", "sentence_transformers", "onnxruntime", "transformers")

# Runs vetted in this interpreter, then says which heavy packages it loaded.
PROBE = """
import json, runpy, sys
sys.argv = ["vetted", *sys.argv[1:]]
try:
    runpy.run_module("memory_site.command_line", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(HEAVY))
sys.stderr.write("LOADED " + json.dumps(loaded) + "\\n")
""".replace("HEAVY", repr(HEAVY))


def environment(home: Path) -> dict[str, str]:
    env = {**os.environ, "VETTED_HOME": str(home), "VETTED_EMBEDDER": "fake", "PYTHONPATH": str(PROJECT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def vetted(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memory_site.command_line", *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def migrated_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("vetted-home")
    done = vetted(environment(home), "manage", "migrate", "-v0", timeout=300)
    assert done.returncode == 0, done.stderr
    return home


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["review", "list"], ["agent", "list"], ["space", "list"], ["status"], ["--help"], ["data", "--help"]]
)
def test_a_command_that_does_not_serve_starts_without_the_sdk_the_model_or_numpy(migrated_home, args):
    """Slow: starts a Python process per command (the point is a fresh
    interpreter's imports). Keeping these out is what lets the command line
    start in well under a second (bench_cli measures it)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=PROJECT,
        env=environment(migrated_home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [text for text in done.stderr.splitlines() if text.startswith("LOADED ")]
    assert line, done.stderr[-2000:]
    assert json.loads(line[-1].removeprefix("LOADED ")) == []
    assert "Traceback" not in done.stderr


def every_help() -> list[list[str]]:
    """`--help` of the tool, of each of its groups and commands, and of each
    subcommand a handed-over command has (`review accept`, `space grant`, ...)."""
    import click

    from memory_site.command_line import app, helptext

    found: list[list[str]] = [["--help"]]

    def walk(words: list[str], command: click.Command) -> None:
        found.append([*words, "--help"])
        if isinstance(command, click.Group):
            for name, member in command.commands.items():
                walk([*words, name], member)

    for name, command in app.cli.commands.items():
        if name != "manage":  # Django's own commands: `vetted manage help` lists them
            walk([name], command)
    kept = json.loads(helptext.HELP_FILE.read_text(encoding="utf-8"))
    found += [[*key.split(), "--help"] for key in sorted(kept) if [*key.split(), "--help"] not in found]
    return found


@pytest.mark.slow
def test_no_command_s_help_imports_numpy_the_mcp_sdk_or_torch(tmp_path):
    """Slow: a fresh interpreter per command (imports accumulate in one).
    Every --help a person can ask for, each must answer 0 without a
    traceback and without loading a heavy package."""
    env = environment(tmp_path)
    env.pop("VETTED_LIVE_HELP", None)
    failures = []
    for args in every_help():
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120
        )
        line = [text for text in done.stderr.splitlines() if text.startswith("LOADED ")]
        loaded = json.loads(line[-1].removeprefix("LOADED ")) if line else ["(no answer)"]
        if loaded or "Traceback" in done.stderr or "usage" not in done.stdout.lower():
            failures.append(f"vetted {' '.join(args)}: loaded {loaded}; {done.stderr[-300:]}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_serve_in_the_background_outlives_its_command_and_status_and_stop_follow_it(migrated_home):
    """Slow: starts the real daemon (fake embedder) detached, as a person
    does who wants HTTP clients to keep working after closing the terminal."""
    env = environment(migrated_home)
    port = free_port()
    started = vetted(env, "serve", "--background", "--port", str(port), timeout=300)
    assert started.returncode == 0, started.stderr
    record = listening.read(migrated_home)
    assert record is not None and record.alive and record.port == port and record.state == "listening"
    assert f"Vetted runs in the background at http://127.0.0.1:{port}/ (pid {record.pid})" in started.stderr
    assert (migrated_home / "serve.pid").read_text().strip() == str(record.pid)
    assert (migrated_home / "daemon.log").exists()
    try:
        assert listening.health(record.url) is not None  # still serving: the command that started it is gone

        status = vetted(env, "status")
        assert status.returncode == 0
        assert f"Vetted is running at http://127.0.0.1:{port}/ (pid {record.pid}" in status.stdout
        assert "health: ok" in status.stdout

        began = time.monotonic()
        again = vetted(env, "serve", "--port", str(port))
        assert again.returncode == 4  # already running here: `make run` ends 0 on it
        assert f"Vetted is already running for {migrated_home}" in again.stderr and "vetted stop" in again.stderr
        assert "migration" not in again.stderr and "Traceback" not in again.stderr
        assert time.monotonic() - began < 30  # said before anything slow; not a timing target

        stopped = vetted(env, "stop")
        assert stopped.returncode == 0 and f"Stopped Vetted (pid {record.pid})." in stopped.stdout
        assert not listening.pid_alive(record.pid) or _zombie(record.pid)
        assert not (migrated_home / "serve.json").exists() and not (migrated_home / "serve.pid").exists()
        assert vetted(env, "status").returncode == 3
    finally:
        if listening.pid_alive(record.pid) and not _zombie(record.pid):
            os.kill(record.pid, 15)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_django_s_full_system_checks_do_not_import_the_mcp_sdk(migrated_home):
    """Slow: a fresh interpreter. `manage.py` commands run every check, which
    imports the URL configuration and, through DRF's settings, the REST
    authentication class; that class must not pull in the SDK's OAuth handlers."""
    code = (
        "import os, sys, django\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'memory_site.settings'\n"
        "django.setup()\n"
        "from django.core import checks\n"
        "assert not [m for m in checks.run_checks() if m.is_serious()]\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'torch'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, env=environment(migrated_home), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
