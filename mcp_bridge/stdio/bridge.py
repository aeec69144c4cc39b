"""The stdio bridge: what Claude Desktop, Claude Code, Codex or Cursor spawn
(`vetted-mcp`, or `python manage.py mcp_stdio`).

It relays MCP's JSON-RPC messages between stdio and the daemon's streamable
HTTP endpoint (/mcp), adding the agent's bearer token. Every tool, schema
and answer comes from the daemon, so the two transports cannot drift apart.

Why a relay and not an MCP SDK server: the SDK takes ~0.75 s just to import
on these machines (pydantic models for every protocol version), and the
bridge must answer its first tool call within 1 s of being spawned. This
module imports only the standard library (no Django, no torch, no SDK), so
it starts in tens of milliseconds. Nothing but protocol messages is ever
written to stdout; diagnostics go to stderr.

Configuration (environment, else a JSON config file):
  VETTED_URL         daemon base URL (default http://127.0.0.1:8765)
  VETTED_TOKEN       the agent token (or VETTED_TOKEN_FILE: a file holding it)
  VETTED_CONFIG      JSON file with "url", "token", "autostart"
                     (default ~/.config/vetted/bridge.json)
  VETTED_AUTOSTART   1/0: start the daemon when it is not running (default 1,
                     only for a loopback URL)
  VETTED_HOME        the data folder the daemon uses (lock and log go there)
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from memory_site.defaults import DEFAULT_PORT, DEFAULT_URL, PROJECT_DIR  # standard library only

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
    def start_command(self) -> str:
        port = self.parts.port or DEFAULT_PORT
        return (f"cd {PROJECT_DIR} && make run PORT={port}   "
                f"(or: {sys.executable} {PROJECT_DIR / 'manage.py'} serve --port {port})")


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

    url = (env.get("VETTED_URL") or file_values.get("url") or DEFAULT_URL).strip().rstrip("/")
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
        raise BridgeError("No agent token: set VETTED_TOKEN (or VETTED_TOKEN_FILE, or \"token\" in "
                          f"{path}). Create one with `python manage.py connect CLIENT --agent NAME`.")

    raw_autostart = env.get("VETTED_AUTOSTART")
    if raw_autostart not in (None, ""):
        autostart = _truthy("VETTED_AUTOSTART", raw_autostart)
    else:
        autostart = bool(file_values.get("autostart", True))
    autostart = autostart and (parts.hostname in _LOOPBACK)  # never start a "remote" server here
    home = Path(env.get("VETTED_HOME") or PROJECT_DIR / "var").expanduser()
    return Config(url=url, token=token, autostart=autostart, home=home)


# --------------------------------------------------------------------------- daemon


def daemon_healthy(cfg: Config, timeout: float = 2.0) -> bool:
    try:
        conn = _connection(cfg, timeout)
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
        raise BridgeError(f"Vetted is not running at {cfg.url}. Start it with: {cfg.start_command}. "
                          "(Autostart is off: VETTED_AUTOSTART=0 or a non-local URL.)")
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
                [sys.executable, str(PROJECT_DIR / "manage.py"), "serve", "--host", cfg.parts.hostname, "--port", port],
                cwd=PROJECT_DIR, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True,  # outlives the bridge; the client's signals do not reach it
                env={**os.environ, "VETTED_HOME": str(cfg.home)},
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if daemon_healthy(cfg):
                log(f"daemon up (pid {process.pid})")
                return
            if process.poll() is not None:
                raise BridgeError(f"The Vetted daemon exited with code {process.returncode} while starting; "
                                  f"see {log_path}. Start it by hand with: {cfg.start_command}")
            time.sleep(0.2)
        raise BridgeError(f"The Vetted daemon did not answer {cfg.url}/health within {START_TIMEOUT:.0f} s; "
                          f"see {log_path}.")


def _connection(cfg: Config, timeout: float) -> http.client.HTTPConnection:
    parts = cfg.parts
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return cls(parts.hostname, parts.port, timeout=timeout)


# --------------------------------------------------------------------------- relay


class Upstream(Exception):
    """The daemon answered with an HTTP error instead of JSON-RPC."""

    def __init__(self, status: int, body: bytes):
        self.status = status
        try:
            detail = json.loads(body)
            text = detail.get("message") or detail.get("error", {}).get("message") or body.decode("utf-8", "replace")
        except (ValueError, AttributeError):
            text = body.decode("utf-8", "replace").strip()
        super().__init__(f"HTTP {status}: {text[:500]}")


class Relay:
    def __init__(self, cfg: Config, write):
        self.cfg = cfg
        self.write = write
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._init_message: dict | None = None
        self._initialized_sent = False
        # Set except while an initialize is in flight: anything sent after an
        # initialize must wait for its session id.
        self._ready = threading.Event()
        self._ready.set()
        self._session_lock = threading.Lock()
        self._local = threading.local()

    # --- HTTP

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connection(self.cfg, REQUEST_TIMEOUT)
        return conn

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {self.cfg.token}"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["Mcp-Protocol-Version"] = self.protocol_version
        return headers

    def _post(self, message) -> list:
        """POST one message; return the JSON-RPC messages the daemon sent back."""
        body = json.dumps(message).encode("utf-8")
        for attempt in (1, 2):  # a kept-alive connection the daemon closed: reconnect once
            conn = self._conn()
            try:
                conn.request("POST", "/mcp", body=body, headers=self._headers())
                response = conn.getresponse()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
            except OSError:
                conn.close()
                self._local.conn = None
                raise
        if response.status >= 400:
            data = response.read()
            raise Upstream(response.status, data)
        session = response.getheader("Mcp-Session-Id")
        if session:
            self.session_id = session
        kind = response.getheader("Content-Type", "")
        if response.status == 202 or not kind:
            response.read()
            return []
        if kind.startswith("text/event-stream"):
            return list(_sse_messages(response))
        data = response.read()
        return [json.loads(data)] if data.strip() else []

    # --- sessions

    def _replay_initialize(self) -> None:
        """The daemon restarted (or the session expired): open a new session with
        the client's own initialize request, without bothering the client."""
        with self._session_lock:
            self.session_id = None
            if self._init_message is None:
                return
            self._post(self._init_message)
            if self._initialized_sent:
                self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            log("re-established the session with the daemon")

    def _forward(self, message) -> list:
        try:
            return self._post(message)
        except ConnectionRefusedError:
            ensure_daemon(self.cfg)
            self._replay_if_needed(message)
            return self._post(message)
        except Upstream as exc:
            if exc.status == 404 and self.session_id and not _is_initialize(message):
                self._replay_initialize()
                return self._post(message)
            raise

    def _replay_if_needed(self, message) -> None:
        if self._init_message is not None and not _is_initialize(message):
            self._replay_initialize()

    def handle(self, message) -> None:
        """Relay one client message and write every reply (worker thread)."""
        msg_id = message.get("id") if isinstance(message, dict) else None
        is_request = isinstance(message, dict) and "method" in message and "id" in message
        try:
            if _is_initialize(message):
                self._init_message = message
                self.session_id = None  # a new handshake starts a new session
                ensure_daemon(self.cfg)
            elif not self._ready.wait(timeout=START_TIMEOUT):
                raise BridgeError("initialize did not complete")
            if isinstance(message, dict) and message.get("method") == "notifications/initialized":
                self._initialized_sent = True
            replies = self._forward(message)
            for reply in replies:
                if _is_initialize(message) and isinstance(reply, dict) and "result" in reply:
                    self.protocol_version = reply["result"].get("protocolVersion") or self.protocol_version
                self.write(reply)
        except BridgeError as exc:
            log(str(exc))
            if is_request:
                self.write(_error(msg_id, DAEMON_UNAVAILABLE, str(exc)))
        except Upstream as exc:
            if exc.status == 400 and isinstance(message, dict) and message.get("method") == "server/discover":
                # A 2026-07 client probing for the stateless protocol; the daemon
                # speaks the session protocol, so say so and let it fall back.
                self.write(_error(msg_id, -32601, "Method not found: server/discover"))
                return
            log(f"daemon refused a {message.get('method', 'message') if isinstance(message, dict) else 'batch'}: {exc}")
            if is_request:
                self.write(_error(msg_id, UPSTREAM_ERROR, f"Vetted daemon at {self.cfg.url}: {exc}"))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            log(f"lost the daemon at {self.cfg.url}: {exc!r}")
            if is_request:
                self.write(_error(msg_id, DAEMON_UNAVAILABLE,
                                  f"Cannot reach the Vetted daemon at {self.cfg.url} ({exc}). "
                                  f"Start it with: {self.cfg.start_command}"))
        finally:
            if _is_initialize(message):
                self._ready.set()

    def expect_initialize(self) -> None:
        """Called by the reader before an initialize is handed to a worker."""
        self._ready.clear()

    def close(self) -> None:
        if not self.session_id:
            return
        try:  # end the daemon-side session politely; it would expire anyway
            conn = _connection(self.cfg, 2.0)
            conn.request("DELETE", "/mcp", headers=self._headers())
            conn.getresponse().read()
        except OSError:
            pass


def _is_initialize(message) -> bool:
    return isinstance(message, dict) and message.get("method") == "initialize"


def _error(msg_id, code: int, text: str) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": text}}


def _sse_messages(response):
    """JSON-RPC messages from a text/event-stream body (data lines of each event)."""
    data: list[str] = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                text = "\n".join(data)
                data = []
                if text.strip():
                    yield json.loads(text)
            continue
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
    if data and "".join(data).strip():
        yield json.loads("\n".join(data))


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    # stdout belongs to the protocol: keep a private handle to it, and point
    # sys.stdout at stderr so no stray print can corrupt the stream.
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    try:
        cfg = load_config()
    except BridgeError as exc:
        log(str(exc))
        return 2
    out_lock = threading.Lock()

    def write(message) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        with out_lock:
            out.write(data)
            out.flush()

    relay = Relay(cfg, write)
    # Requests run concurrently (a slow search must not hold up a ping or a
    # cancellation); initialize is waited for by everything after it.
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="relay") as pool:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                write(_error(None, -32700, f"Parse error: {exc}"))
                continue
            if _is_initialize(message):
                relay.expect_initialize()
            pool.submit(relay.handle, message)
    relay.close()
    return 0


def main_entry() -> None:
    """Console script `vetted-mcp`."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":  # pragma: no cover
    main_entry()
