"""The stdio bridge's cold start: with the daemon down, answer
initialize (and tools/list, ping) from the daemon's earlier answers cached in
VETTED_HOME (warm.py) and start the daemon in the background; everything
else waits for it. A mixin of bridge.Relay, split out to keep each module
small; it uses the relay's state (cfg, cache, _post, write, the events)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from .config import START_TIMEOUT, BridgeError, Config, daemon_healthy, ensure_daemon, log
from .warm import AnswerCache, cacheable_list


class ColdStart:
    # The relay's state this mixin reads and sets (defined in Relay.__init__).
    cfg: Config
    cache: AnswerCache
    write: Callable[[dict], None]
    protocol_version: str | None
    session_id: str | None
    _init_message: dict | None
    _initialized_sent: bool
    _session_lock: threading.Lock
    _requested_version: str
    _starting: threading.Thread | None
    _daemon_up: threading.Event
    _start_error: Exception | None
    _listed_from_cache: bool

    def _post(self, message, on_message=None) -> list:
        raise NotImplementedError

    def _answer_cold_initialize(self, msg_id) -> bool:
        """With the daemon down, autostart on and the daemon's earlier answer
        cached: answer initialize now and start the daemon in the background."""
        if not self.cfg.autostart or self._starting is not None:
            return False
        cached = self.cache.get(self._requested_version, "initialize")
        if cached is None or daemon_healthy(self.cfg, timeout=1.0):
            return False
        self.protocol_version = cached.get("protocolVersion") or self.protocol_version
        self._starting = threading.Thread(target=self._start_in_background, name="daemon-start", daemon=True)
        self._starting.start()
        self.write({"jsonrpc": "2.0", "id": msg_id, "result": cached})
        return True

    def _start_in_background(self) -> None:
        try:
            ensure_daemon(self.cfg)
            with self._session_lock:  # the client's initialized may arrive meanwhile (see _while_starting)
                self.session_id = None
                assert self._init_message is not None  # set before the thread starts
                for reply in self._post(self._init_message):
                    if isinstance(reply, dict) and "result" in reply:
                        self.cache.put(self._requested_version, "initialize", reply["result"])
                if self._initialized_sent:
                    self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
                self._daemon_up.set()
            if self._initialized_sent:  # the daemon refuses requests before it
                self._refresh_tool_list()
        except Exception as exc:  # reported to every request that waits for the daemon
            self._start_error = exc
            log(f"could not start the daemon: {exc}")
        finally:
            self._daemon_up.set()

    def _refresh_tool_list(self) -> None:
        for reply in self._post({"jsonrpc": "2.0", "id": "vetted-bridge-tools", "method": "tools/list"}):
            if isinstance(reply, dict) and isinstance(reply.get("result"), dict):
                changed = self.cache.put(self._requested_version, "tools/list", reply["result"])
                if changed and self._listed_from_cache:
                    log("the daemon's tool list differs from the cached one; told the client")
                    self.write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    def _while_starting(self, message, msg_id) -> bool:
        """While the daemon starts: answer what needs no daemon (tools/list from
        the cache, ping), hold back the initialized notification for the
        session being opened, and let everything else wait. True when done."""
        method = message.get("method") if isinstance(message, dict) else None
        if not self._daemon_up.is_set():
            if method == "notifications/initialized":
                with self._session_lock:
                    self._initialized_sent = True
                    if not self._daemon_up.is_set():
                        return True  # sent with the session, by _start_in_background
                return False
            if method == "ping" and msg_id is not None:
                self.write({"jsonrpc": "2.0", "id": msg_id, "result": {}})
                return True
            cached = self.cache.get(self._requested_version, "tools/list") if cacheable_list(message) else None
            if cached is not None:
                self._listed_from_cache = True
                self.write({"jsonrpc": "2.0", "id": msg_id, "result": cached})
                return True
        if method == "notifications/initialized":
            self._initialized_sent = True
        if not self._daemon_up.wait(timeout=START_TIMEOUT + 10):
            raise BridgeError(f"The Vetted daemon did not start within {START_TIMEOUT:.0f} s.")
        if self._start_error is not None:
            if msg_id is None:
                # A notification cannot carry the report, so it must not use it
                # up: the next request receives it (the start may fail before or
                # after the client's initialized arrives; either way the same).
                return True
            error = self._start_error
            # Reported once; later requests take the usual path (which starts
            # the daemon again, or says how), as if the bridge had just started.
            self._starting, self._start_error = None, None
            if isinstance(error, BridgeError):
                raise error
            raise BridgeError(f"Cannot start the Vetted daemon at {self.cfg.url}: {error}")
        return False
