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

import errno
import json
import os
import socket
import time
import urllib.request
from collections.abc import Callable
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


class AlreadyServing(Exception):
    """Vetted already serves this VETTED_HOME on that port, or the port is
    taken; the message says where and what to do."""


def refuse_if_running(home: Path | str, host: str, port: int, note: Callable[[str], None]) -> Listening | None:
    """Raise AlreadyServing, saying where Vetted already runs and how to stop
    it, when this VETTED_HOME's daemon is alive on this port or the port is
    taken. Returns the live record of this VETTED_HOME's daemon on another
    port (servers may share the data; the first one keeps the record).
    Standard library only, so `vetted serve` says it before Django loads."""
    record = read(home)
    if record is not None and not record.alive:
        note(f"Note: {record.path} was left by a daemon that is gone (pid {record.pid}); ignoring it.")
        record.path.unlink(missing_ok=True)
        record = None
    elif record is not None and record.port != port:
        note(
            f"Note: Vetted (pid {record.pid}) also serves this VETTED_HOME at {record.url}/; "
            f"{record.path} keeps naming that one."
        )
    elif record is not None:
        doing = "is starting" if record.state == "starting" else "is already running"
        raise AlreadyServing(
            f"Vetted {doing} for {home}: {record.url}/ (pid {record.pid}, since {record.started_text}). "
            f"Use it as it is, or stop it with `vetted stop` (or `kill {record.pid}`, Ctrl-C in its terminal) "
            "and run this again."
        )
    if not port_free(host, port):
        url = local_url(host, port)
        if vetted_answers(url):
            raise AlreadyServing(
                f"Vetted is already running on {url}/ with another data folder (VETTED_HOME; "
                f"its serve.json there names its pid). Stop it, or choose another port: --port N "
                f"(make run PORT=N)."
            )
        raise AlreadyServing(
            f"Port {port} on {host} is in use by another program. Choose another port: --port N (make run PORT=N)."
        )
    return record


def port_free(host: str, port: int) -> bool:
    """Whether ``host:port`` can be bound now (as uvicorn will: SO_REUSEADDR,
    so a port in TIME_WAIT counts as free)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return True  # let uvicorn report a host it cannot resolve
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.errno != errno.EADDRINUSE
    return True


def health(url: str, timeout: float = 2.0) -> dict | None:
    """What a Vetted daemon's /health answers at ``url``; None if nothing
    answers there, or something that is not Vetted."""
    try:
        with urllib.request.urlopen(url + "/health", timeout=timeout) as response:
            data = json.loads(response.read())
    except (OSError, ValueError):
        return None
    return data if is_vetted(data) else None


SERVICE = "vetted"  # what /health names itself, so `serve`, `vetted status` and the bridge recognise Vetted


def is_vetted(data: object) -> bool:
    """Whether a /health answer (parsed JSON) is a running Vetted's: the
    answer without credentials carries no counts, only the service name."""
    return isinstance(data, dict) and data.get("service") == SERVICE and data.get("status") == "ok"


def vetted_answers(url: str) -> bool:
    return health(url) is not None
