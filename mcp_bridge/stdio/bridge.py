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
  VETTED_URL         daemon base URL (default: where VETTED_HOME's running daemon
                     listens, from VETTED_HOME/serve.json, else http://127.0.0.1:8765)
  VETTED_TOKEN       the agent token (or VETTED_TOKEN_FILE: a file holding it)
  VETTED_CONFIG      JSON file with "url", "token", "autostart"
                     (default ~/.config/vetted/bridge.json)
  VETTED_AUTOSTART   1/0: start the daemon when it is not running (default 1,
                     only for a loopback URL)
  VETTED_HOME        the data folder the daemon uses (lock and log go there)
"""

from __future__ import annotations

import base64
import http.client
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from .cold import ColdStart
from .config import (
    DAEMON_UNAVAILABLE,
    REQUEST_TIMEOUT,
    START_TIMEOUT,
    UPSTREAM_ERROR,
    BridgeError,
    Config,
    ensure_daemon,
    load_config,
    log,
    open_connection,
)
from .warm import AnswerCache, cacheable_list, requested_version

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


class Relay(ColdStart):
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
        self._session_stream: threading.Thread | None = None
        # Cold start (warm.py): initialize answered from the cache while the
        # daemon starts in the background; everything else waits for it.
        self.cache = AnswerCache(cfg.home, cfg.token)
        self._requested_version = ""
        self._starting: threading.Thread | None = None
        self._daemon_up = threading.Event()
        self._start_error: Exception | None = None
        self._listed_from_cache = False

    # --- HTTP

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = open_connection(self.cfg, REQUEST_TIMEOUT)
        return conn

    def _headers(self, message=None) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {self.cfg.token}",
        }
        modern = _modern_version(message)
        if modern:
            # A 2026-07-28 request is stateless: no session, and the
            # routing headers the HTTP transport checks against the body.
            headers["Mcp-Protocol-Version"] = modern
            headers["Mcp-Method"] = message["method"]
            named = message["params"].get(_NAMED.get(message["method"], ""))
            if isinstance(named, str):
                headers["Mcp-Name"] = _header_value(named)
            return headers
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["Mcp-Protocol-Version"] = self.protocol_version
        return headers

    def _post(self, message, on_message=None) -> list:
        """POST one message; return the JSON-RPC messages the daemon sent back
        (or hand each to ``on_message`` as it arrives: a listen stream)."""
        body = json.dumps(message).encode("utf-8")
        for attempt in (1, 2):  # a kept-alive connection the daemon closed: reconnect once
            # A listen stream may stay quiet for hours: its own connection, no read timeout.
            conn = open_connection(self.cfg, None) if _is_listen(message) else self._conn()
            try:
                conn.request("POST", "/mcp", body=body, headers=self._headers(message))
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
            if on_message is not None:
                for item in _sse_messages(response):
                    on_message(item)
                return []
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
        on_message = self.write if _is_listen(message) or _modern_version(message) else None
        try:
            return self._post(message, on_message)
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
                self._requested_version = requested_version(message)
                if self._answer_cold_initialize(msg_id):
                    return
                ensure_daemon(self.cfg)
            elif not self._ready.wait(timeout=START_TIMEOUT):
                raise BridgeError("initialize did not complete")
            elif self._starting is not None and self._while_starting(message, msg_id):
                return
            if isinstance(message, dict) and message.get("method") == "notifications/initialized":
                self._initialized_sent = True
            replies = self._forward(message)
            if isinstance(message, dict) and message.get("method") == "resources/subscribe":
                self._listen_to_session()
            for reply in replies:
                if _is_initialize(message) and isinstance(reply, dict) and "result" in reply:
                    self.protocol_version = reply["result"].get("protocolVersion") or self.protocol_version
                    self.cache.put(self._requested_version, "initialize", reply["result"])
                elif cacheable_list(message) and isinstance(reply, dict) and "result" in reply:
                    self.cache.put(self._requested_version, "tools/list", reply["result"])
                self.write(reply)
        except BridgeError as exc:
            log(str(exc))
            if is_request:
                self.write(_error(msg_id, DAEMON_UNAVAILABLE, str(exc)))
        except Upstream as exc:
            log(f"daemon refused a {message.get('method', 'message') if isinstance(message, dict) else 'batch'}: {exc}")
            if is_request:
                self.write(_error(msg_id, UPSTREAM_ERROR, f"Vetted daemon at {self.cfg.url}: {exc}"))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            log(f"lost the daemon at {self.cfg.url}: {exc!r}")
            if is_request:
                self.write(
                    _error(
                        msg_id,
                        DAEMON_UNAVAILABLE,
                        f"Cannot reach the Vetted daemon at {self.cfg.url} ({exc}). "
                        f"Start it with: {self.cfg.start_command}",
                    )
                )
        finally:
            if _is_initialize(message):
                self._ready.set()

    def _listen_to_session(self) -> None:
        """After a 2025-11-25 resources/subscribe, relay the
        session's standalone stream (GET /mcp), where its notifications come."""
        if self._session_stream is not None or not self.session_id:
            return

        def relay() -> None:
            try:
                conn = open_connection(self.cfg, None)
                headers = self._headers()
                headers["Accept"] = "text/event-stream"
                conn.request("GET", "/mcp", headers=headers)
                response = conn.getresponse()
                if response.status == 200:
                    for item in _sse_messages(response):
                        self.write(item)
            except (OSError, ValueError, http.client.HTTPException) as exc:
                log(f"the session's notification stream ended: {exc!r}")
            finally:
                self._session_stream = None

        self._session_stream = threading.Thread(target=relay, name="session-stream", daemon=True)
        self._session_stream.start()

    def expect_initialize(self) -> None:
        """Called by the reader before an initialize is handed to a worker."""
        self._ready.clear()

    def close(self) -> None:
        if not self.session_id:
            return
        try:  # end the daemon-side session politely; it would expire anyway
            conn = open_connection(self.cfg, 2.0)
            conn.request("DELETE", "/mcp", headers=self._headers())
            conn.getresponse().read()
        except OSError:
            pass


# The params each 2026-07-28 method mirrors in Mcp-Name (the SDK's NAME_BEARING_METHODS).
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_PROTOCOL_META = "io.modelcontextprotocol/protocolVersion"


def _modern_version(message) -> str | None:
    """The 2026-07-28 (stateless) revision a request names in its _meta, else None."""
    if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
        return None
    meta = message["params"].get("_meta")
    version = meta.get(_PROTOCOL_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) and "method" in message else None


def _is_listen(message) -> bool:
    return isinstance(message, dict) and message.get("method") == "subscriptions/listen"


def _header_value(value: str) -> str:
    """As the SDK's encode_header_value: printable ASCII as is, else base64-wrapped."""
    if value.isascii() and value.isprintable() and value == value.strip() and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


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
