"""The stdio bridge's configuration and the daemon it talks to: where it is,
which token to send, and starting it when it is down. Standard library only."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from common import listening  # standard library only, like defaults
from common.defaults import DEFAULT_PORT, DEFAULT_URL, PROJECT_DIR  # standard library only

DEFAULT_CONFIG = Path("~/.config/vetted/bridge.json").expanduser()
START_TIMEOUT = 120.0  # seconds to wait for a daemon we started (model load, index catch-up)
REQUEST_TIMEOUT = 300.0
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# JSON-RPC error codes: -32000..-32099 are for the implementation.
DAEMON_UNAVAILABLE = -32001
UPSTREAM_ERROR = -32002


class BridgeError(Exception):
    """A problem the person configuring the client has to fix; the message says how."""


def log(message: str) -> None:
    print(f"vetted-mcp: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    url: str
    token: str
    autostart: bool
    home: Path

    @property
    def parts(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.url)

    @property
    def host(self) -> str:
        return self.parts.hostname or ""  # never empty: load_config refuses a URL without a host

    @property
    def start_command(self) -> str:
        port = self.parts.port or DEFAULT_PORT
        return (
            f"cd {PROJECT_DIR} && make run PORT={port}   "
            f"(or: {sys.executable} {PROJECT_DIR / 'manage.py'} serve --port {port})"
        )


def _truthy(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise BridgeError(f"{name}={value!r} is not a boolean; use 1 or 0.")


def load_config(env: dict[str, str] | None = None) -> Config:
    env = dict(os.environ if env is None else env)
    path = Path(env.get("VETTED_CONFIG") or DEFAULT_CONFIG).expanduser()
    file_values: dict = {}
    if path.is_file():
        try:
            file_values = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BridgeError(f"Cannot read the bridge config {path}: {exc}") from None
        if not isinstance(file_values, dict):
            raise BridgeError(f"The bridge config {path} must hold a JSON object with url, token, autostart.")
    elif env.get("VETTED_CONFIG"):
        raise BridgeError(f"VETTED_CONFIG={path} does not exist.")

    home = Path(env.get("VETTED_HOME") or PROJECT_DIR / "var").expanduser()
    url = (env.get("VETTED_URL") or file_values.get("url") or _recorded_url(home) or DEFAULT_URL).strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BridgeError(f"VETTED_URL={url!r} is not an http(s) URL such as {DEFAULT_URL}.")
    if parts.path.endswith("/mcp"):
        url = url[: -len("/mcp")]

    token = (env.get("VETTED_TOKEN") or "").strip()
    if not token and env.get("VETTED_TOKEN_FILE"):
        token_file = Path(env["VETTED_TOKEN_FILE"]).expanduser()
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise BridgeError(f"VETTED_TOKEN_FILE={token_file} cannot be read: {exc}") from None
    token = token or str(file_values.get("token") or "").strip()
    if not token:
        raise BridgeError(
            'No agent token: set VETTED_TOKEN (or VETTED_TOKEN_FILE, or "token" in '
            f"{path}). Create one with `python manage.py connect CLIENT --agent NAME`."
        )

    raw_autostart = env.get("VETTED_AUTOSTART")
    if raw_autostart not in (None, ""):
        autostart = _truthy("VETTED_AUTOSTART", raw_autostart)
    else:
        autostart = bool(file_values.get("autostart", True))
    autostart = autostart and (parts.hostname in _LOOPBACK)  # never start a "remote" server here
    return Config(url=url, token=token, autostart=autostart, home=home)


def _recorded_url(home: Path) -> str | None:
    """Where the running daemon of this VETTED_HOME listens (VETTED_HOME/serve.json)."""
    record = listening.running(home)
    return record.url if record else None


# --------------------------------------------------------------------------- daemon


def daemon_healthy(cfg: Config, timeout: float = 2.0) -> bool:
    try:
        conn = open_connection(cfg, timeout)
        conn.request("GET", "/health")
        response = conn.getresponse()
        response.read()
        conn.close()
        return response.status == 200
    except OSError:
        return False


def ensure_daemon(cfg: Config) -> None:
    """Start the daemon in the background if it is not answering, once: a lock
    file makes concurrent bridges wait for the first one's daemon."""
    if daemon_healthy(cfg):
        return
    if not cfg.autostart:
        raise BridgeError(
            f"Vetted is not running at {cfg.url}. Start it with: {cfg.start_command}. "
            "(Autostart is off: VETTED_AUTOSTART=0 or a non-local URL.)"
        )
    import fcntl  # POSIX only; imported here so the module loads anywhere

    cfg.home.mkdir(parents=True, exist_ok=True)
    with open(cfg.home / "daemon.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held while starting and waiting
        if daemon_healthy(cfg):
            return  # another bridge started it while we waited for the lock
        log_path = cfg.home / "daemon.log"
        port = str(cfg.parts.port or 8765)
        log(f"starting the Vetted daemon on {cfg.url} (log: {log_path})")
        with open(log_path, "ab") as out:
            process = subprocess.Popen(
                [sys.executable, str(PROJECT_DIR / "manage.py"), "serve", "--host", cfg.host, "--port", port],
                cwd=PROJECT_DIR,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,  # outlives the bridge; the client's signals do not reach it
                env={**os.environ, "VETTED_HOME": str(cfg.home)},
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if daemon_healthy(cfg):
                record = listening.running(cfg.home)  # another bridge's or a `make run`'s, maybe
                log(f"daemon up (pid {record.pid if record else process.pid})")
                return
            if process.poll() is not None and not _another_daemon_starting(cfg, process.pid):
                raise BridgeError(
                    f"The Vetted daemon exited with code {process.returncode} while starting; "
                    f"see {log_path}. Start it by hand with: {cfg.start_command}"
                )
            time.sleep(0.2)
        raise BridgeError(
            f"The Vetted daemon did not answer {cfg.url}/health within {START_TIMEOUT:.0f} s; see {log_path}."
        )


def _another_daemon_starting(cfg: Config, our_pid: int) -> bool:
    """Ours exited because another daemon of this VETTED_HOME (e.g. a `make run`
    loading its model) already holds the port: keep waiting for that one."""
    record = listening.running(cfg.home)
    return record is not None and record.pid != our_pid and record.port == (cfg.parts.port or DEFAULT_PORT)


def open_connection(cfg: Config, timeout: float | None) -> http.client.HTTPConnection:
    parts = cfg.parts
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return cls(cfg.host, parts.port, timeout=timeout)
