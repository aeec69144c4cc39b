"""Where a running `serve` listens: ``VETTED_HOME/serve.json`` (host, port,
pid, state, start time, the loopback URL a local client should use).

`serve` writes it (atomically) as soon as it has decided to start, with
state "starting", rewrites it with state "listening" once its socket is
bound, and removes it when it stops cleanly. A file whose pid is no longer
alive is stale (a crash, a kill -9) and is ignored. Readers: `serve` itself
(refusing a second daemon before loading the model), `connect` (no --url
needed) and the stdio bridge (no VETTED_URL needed).

Standard library only: the stdio bridge imports this and must start
without Django.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .files import write_atomic

FILE_NAME = "serve.json"


@dataclass(frozen=True)
class Listening:
    host: str
    port: int
    pid: int
    state: str  # "starting" or "listening"
    started: float  # seconds since the epoch
    path: Path

    @property
    def url(self) -> str:
        return local_url(self.host, self.port)

    @property
    def alive(self) -> bool:
        return pid_alive(self.pid)

    @property
    def started_text(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started))


def record_path(home: Path | str) -> Path:
    return Path(home) / FILE_NAME


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server bound to ``host``:
    a wildcard bind is reached through loopback."""
    bare = host.strip("[]")
    if bare in ("", "0.0.0.0"):
        bare = "127.0.0.1"
    elif bare == "::":
        bare = "::1"
    shown = f"[{bare}]" if ":" in bare else bare
    return f"http://{shown}:{port}"


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    except OSError:
        return False
    return True


def write(home: Path | str, *, host: str, port: int, state: str, started: float | None = None) -> Path:
    path = record_path(home)
    data = {
        "host": host,
        "port": port,
        "pid": os.getpid(),
        "state": state,
        "started": time.time() if started is None else started,
        "url": local_url(host, port),
    }
    write_atomic(path, json.dumps(data, indent=2) + "\n", mode=0o644)
    return path


def read(home: Path | str) -> Listening | None:
    """The record, alive or stale; None when there is none or it cannot be
    read (a file another program wrote there is not ours to trust)."""
    path = record_path(home)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Listening(
            host=str(data["host"]),
            port=int(data["port"]),
            pid=int(data["pid"]),
            state=str(data.get("state", "listening")),
            started=float(data.get("started", 0)),
            path=path,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running(home: Path | str) -> Listening | None:
    """The record only if its process is still alive."""
    record = read(home)
    return record if record is not None and record.alive else None


def remove(home: Path | str) -> None:
    """Remove the record if it is this process's own (never another daemon's)."""
    record = read(home)
    if record is not None and record.pid == os.getpid():
        record.path.unlink(missing_ok=True)
