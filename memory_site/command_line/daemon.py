"""`vetted serve --background`, `vetted status` and `vetted stop`: the
daemon as a detached process whose life does not depend on a terminal.

Its files in VETTED_HOME: ``serve.json`` (the daemon's own record of where it
listens and its pid, common/listening.py), ``serve.pid`` (the pid this
launcher started, known before serve.json exists), ``daemon.log`` (its
output, the same log the stdio bridge's autostart writes) and ``daemon.lock``
(held while starting, as the bridge does, so the two never start two).

Standard library only (and memory_site's stdlib modules): these answer
without loading Django.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common import listening
from common.defaults import PROJECT_DIR

PID_FILE = "serve.pid"
LOG_FILE = "daemon.log"
LOCK_FILE = "daemon.lock"
START_TIMEOUT = 300.0  # a first start exports the embedding model (about a minute on a slow machine)
STOP_TIMEOUT = 30.0
# `vetted serve`'s exit code when this VETTED_HOME's Vetted already serves that
# port: `make run` takes it as done, a systemd unit does not retry it (any
# other failure stays one).
ALREADY_RUNNING = 4


def vetted_home() -> Path:
    """VETTED_HOME as the settings read it (common/env.py), without Django's setup."""
    from common.env import env_path

    return env_path("VETTED_HOME", PROJECT_DIR / "var")


class StartFailed(Exception):
    pass


def start_background(
    home: Path, host: str, port: int, workers: int, say: Callable[[str], None], *, interactive: bool = False
) -> tuple[str, int]:
    """Start `vetted serve` detached (its own session, output to the log) and
    wait until it answers /health; returns its URL and pid. Raises StartFailed with the
    log's last lines if it exits first, and listening.AlreadyServing if a
    daemon of this VETTED_HOME (a stdio bridge's, maybe) got there first."""
    import fcntl  # POSIX; imported here so the module loads anywhere

    home.mkdir(parents=True, exist_ok=True)
    log_path = home / LOG_FILE
    argv = [sys.executable, "-m", "memory_site.command_line", "serve"]
    argv += ["--host", host, "--port", str(port), "--workers", str(workers)]
    with open(home / LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a bridge starting the daemon holds it until that one answers
        listening.refuse_if_running(home, host, port, note=say)
        with open(log_path, "ab") as log:
            start = log.tell()
            log.write(f"--- vetted serve --background, {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n".encode())
            log.flush()
            process = subprocess.Popen(
                argv,
                cwd=PROJECT_DIR,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the terminal's hangup and Ctrl-C do not reach it
                env={**os.environ, "VETTED_HOME": str(home), "PYTHONUNBUFFERED": "1"},
            )
        (home / PID_FILE).write_text(f"{process.pid}\n", encoding="utf-8")
        try:
            url = _wait_until_listening(home, process, listening.local_url(host, port), log_path, start, interactive)
            return url, process.pid
        except KeyboardInterrupt:
            if interactive:
                sys.stderr.write("\r\033[K")
            raise StartFailed(
                f"Stopped waiting; Vetted (pid {process.pid}) goes on starting in the background "
                "(`vetted status` tells when it is up, `vetted stop` stops it)."
            ) from None


def _wait_until_listening(
    home: Path, process: subprocess.Popen, url: str, log_path: Path, start: int, interactive: bool
) -> str:
    """Wait until ``url`` answers /health while our process lives (the port
    was free when it started, so what answers is ours; its serve.json may
    name a first daemon of this VETTED_HOME on another port)."""
    began = time.monotonic()
    while time.monotonic() - began < START_TIMEOUT:
        if listening.health(url, timeout=2.0) is not None and process.poll() is None:
            if interactive:
                sys.stderr.write("\r\033[K")
            return url
        if process.poll() is not None:
            if interactive:
                sys.stderr.write("\r\033[K")
            (home / PID_FILE).unlink(missing_ok=True)
            raise StartFailed(
                f"Vetted exited (code {process.returncode}) while starting; from {log_path}:\n" + _tail(log_path, start)
            )
        if interactive:
            sys.stderr.write(f"\rStarting Vetted in the background... {time.monotonic() - began:.0f} s")
            sys.stderr.flush()
        time.sleep(0.25)
    raise StartFailed(
        f"Vetted (pid {process.pid}) did not answer within {START_TIMEOUT:.0f} s; it may still be starting. "
        f"`vetted status` tells; its log is {log_path}."
    )


def started_lines(home: Path) -> list[str]:
    """What the daemon said while starting in the background (its address,
    the first-run notice), without the web server's own lines or the
    foreground's "Ctrl-C stops it" (the caller says where it runs instead)."""
    text = _tail(home / LOG_FILE, _last_marker(home / LOG_FILE), lines=60)
    skip = ("INFO:", "---", "Vetted on ")
    return [line for line in text.splitlines() if line.strip() and not line.startswith(skip)]


def _last_marker(path: Path) -> int:
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    return max(data.rfind(b"--- vetted serve --background"), 0)


def _tail(path: Path, offset: int, lines: int = 25) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def launched_pid(home: Path) -> int | None:
    """The pid in serve.pid, if that process is alive and is a Vetted daemon
    (a pid left in the file may have been reused by another program)."""
    try:
        pid = int((home / PID_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    if not listening.pid_alive(pid):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid  # no /proc (macOS): trust the file
    return pid if b"memory_site.command_line" in cmdline or b"manage.py" in cmdline else None


def _alive(pid: int) -> bool:
    """Alive and not a zombie: a detached daemon's parent is init, and not
    every container's init reaps the processes it inherits."""
    if not listening.pid_alive(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def status(home: Path, say: Callable[[str], None]) -> int:
    """Say whether Vetted runs for this VETTED_HOME, where, since when and
    how it is; exit code 0 if it runs, 3 if not (as service managers do)."""
    record = listening.running(home)
    if record is None:
        pid = launched_pid(home)
        if pid is not None:
            say(f"Vetted is starting for {home} (pid {pid}); its log is {home / LOG_FILE}.")
            return 0
        say(f"Vetted is not running for {home}. Start it: vetted serve (or vetted serve --background).")
        return 3
    doing = "starting" if record.state == "starting" else "running"
    say(f"Vetted is {doing} at {record.url}/ (pid {record.pid}, since {record.started_text}).")
    say(f"  data:  {home}")
    if (home / LOG_FILE).exists():
        say(f"  log:   {home / LOG_FILE}")
    if record.state != "starting":
        health = listening.health(record.url)
        if health is None:
            say("  health: no answer from /health yet")
        else:
            # /health without credentials names only the service and its version
            # (its counts are the operator's, in the browser).
            say(f"  health: ok; version {health.get('version', '?')}")
    return 0


def stop(home: Path, say: Callable[[str], None], timeout: float = STOP_TIMEOUT) -> int:
    """Stop this VETTED_HOME's daemon (SIGTERM: it finishes the requests in
    flight and removes its record) and wait until it has gone."""
    record = listening.running(home)
    pid = record.pid if record is not None else launched_pid(home)
    if pid is None:
        say(f"Vetted is not running for {home}.")
        (home / PID_FILE).unlink(missing_ok=True)
        return 0
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:
        say(f"Vetted (pid {pid}) belongs to another user; stop it as that user.")
        return 1
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        say(f"Vetted (pid {pid}) did not stop within {timeout:.0f} s; `kill -9 {pid}` ends it at once.")
        return 1
    (home / PID_FILE).unlink(missing_ok=True)
    say(f"Stopped Vetted (pid {pid}).")
    return 0
