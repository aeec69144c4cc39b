"""The bridge's answer cache: the daemon's own answers to ``initialize`` and
``tools/list``, kept in VETTED_HOME/bridge-cache.json, so that a bridge
spawned while the daemon is down can answer them at once and start the
daemon in parallel (clients such as Codex give a server about 10 s to start;
a cold daemon can take most of that).

Both answers are the same for every agent today (no per-agent tools, no
data), but answers are still kept per token (by a digest, never the token),
so one agent's bridge can never be handed what the daemon told another, even
if that changes. An entry is trusted only while nothing it depends on
changed: the fingerprint covers the token's digest, the project's Python
files (size and mtime), the installed SDK's folder and the VETTED_* settings
the daemon would start with. After
the daemon is up the bridge asks it again and, if the tool list differs,
updates the cache and tells the client (notifications/tools/list_changed).

Standard library only (see bridge.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sysconfig
import threading
from pathlib import Path

from common.defaults import PROJECT_DIR
from common.files import write_atomic

FILE_NAME = "bridge-cache.json"
CACHED = ("initialize", "tools/list")
# What the daemon's answers can depend on (tool descriptions name limits, modes...).
_SOURCES = ("common", "mcp_bridge", "memory_site", "reviews", "inbox", "portability", "retrieval")
# Settings that only concern the bridge itself, and the secret.
_BRIDGE_ONLY = {"VETTED_TOKEN", "VETTED_TOKEN_FILE", "VETTED_URL", "VETTED_CONFIG", "VETTED_AUTOSTART"}


MAX_ENTRIES = 8  # fingerprints kept (agents sharing a VETTED_HOME, code versions)


def fingerprint(token: str, env: dict[str, str] | None = None) -> str:
    env = dict(os.environ if env is None else env)
    digest = hashlib.sha256()
    digest.update(b"token:" + hashlib.sha256(token.encode()).digest() + b"\n")
    for package in _SOURCES:
        for folder, dirs, files in os.walk(PROJECT_DIR / package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    try:
        mcp_sdk = Path(sysconfig.get_paths()["purelib"]) / "mcp"
        digest.update(f"sdk:{mcp_sdk.stat().st_mtime_ns}\n".encode())
    except OSError:
        digest.update(b"sdk:none\n")
    for key in sorted(k for k in env if k.startswith("VETTED_") and k not in _BRIDGE_ONLY):
        digest.update(f"{key}={env[key]}\n".encode())
    return digest.hexdigest()


class AnswerCache:
    def __init__(self, home: Path, token: str, env: dict[str, str] | None = None):
        self.path = Path(home) / FILE_NAME
        self._token = token
        self._env = env
        self._fingerprint: str | None = None
        self._answers: dict | None = None
        self._lock = threading.Lock()

    @property
    def current(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self._token, self._env)
        return self._fingerprint

    def _entries(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = data.get("entries") if isinstance(data, dict) else None
            return entries if isinstance(entries, dict) else {}
        except (OSError, ValueError):
            return {}

    def _load(self) -> dict:
        if self._answers is None:
            answers = self._entries().get(self.current)
            self._answers = answers if isinstance(answers, dict) else {}
        return self._answers

    def get(self, version: str, method: str) -> dict | None:
        """The daemon's earlier answer (its ``result``) for a client asking
        with protocol ``version``, or None."""
        with self._lock:
            result = self._load().get(version, {}).get(method)
        return result if isinstance(result, dict) else None

    def put(self, version: str, method: str, result: dict) -> bool:
        """Keep a fresh answer; True when it differs from the one kept before."""
        if method not in CACHED or not isinstance(result, dict):
            return False
        with self._lock:
            answers = self._load()
            if answers.get(version, {}).get(method) == result:
                return False
            answers.setdefault(version, {})[method] = result
            entries = {k: v for k, v in self._entries().items() if k != self.current}
            entries = dict(list(entries.items())[-(MAX_ENTRIES - 1) :]) if MAX_ENTRIES > 1 else {}
            entries[self.current] = answers  # the newest last
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(self.path, json.dumps({"entries": entries}), mode=0o600)
            except OSError:
                pass  # a cache: the next start just waits for the daemon
            return True


def requested_version(message: dict) -> str:
    params = message.get("params") if isinstance(message, dict) else None
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    return version if isinstance(version, str) else ""


def cacheable_list(message) -> bool:
    """A first-page tools/list (a cursor would ask for a later page)."""
    if not isinstance(message, dict) or message.get("method") != "tools/list":
        return False
    params = message.get("params")
    return not (isinstance(params, dict) and params.get("cursor"))
