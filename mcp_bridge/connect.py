"""Client configuration for `manage.py connect`: the exact block each MCP
client expects, and a careful merge into its config file.

stdio (the default) runs the bridge with absolute paths, so the client needs
nothing on its PATH and the bridge can start the daemon when it is down.
HTTP (--http) points the client straight at /mcp with the token in a header,
for clients that support remote servers with headers.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import tomlkit

from .bridge import DEFAULT_URL, PROJECT_DIR

SERVER_NAME = "vetted"

GLOBAL_INSTRUCTIONS = """\
## Shared memory (Vetted)
You have a shared, human-reviewed memory through the `vetted` MCP server.
- At the start of a session call `describe` once: it lists the kinds, scopes and tags in use and the write rules.
- Before answering from memory, or before proposing anything, call `search` (and `read` for a whole record).
  Only what a person approved is returned; trust it over your own recollection, and say when you used it.
- When you learn something durable that another session or tool would need (a decision, a fact about a
  system, a user preference, a procedure), call `propose_context` with a reason. It waits for the user's review.
  To correct a record, propose a revision (`revises`); if a record is wrong, `dispute` it with the evidence;
  if it no longer holds, `propose_retirement`.
- Do not save secrets, credentials, personal data of others, guesses, or transient task state.
- Use `proposal_status` to learn what the reviewer decided; never re-propose a rejected item unchanged."""


class ConnectError(Exception):
    """Something the person running `connect` has to fix; the message says how."""


@dataclass(frozen=True)
class ClientSpec:
    name: str
    label: str
    fmt: str  # "json" or "toml"
    http: bool  # can it reach a remote server with a bearer header?

    def config_path(self) -> Path:
        home = Path.home()
        if self.name == "claude-code":
            return home / ".claude.json"
        if self.name == "claude-desktop":
            if sys.platform == "darwin":
                return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
            if sys.platform == "win32":
                return Path(os.environ.get("APPDATA", home)) / "Claude" / "claude_desktop_config.json"
            return home / ".config" / "Claude" / "claude_desktop_config.json"
        if self.name == "codex":
            return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "config.toml"
        if self.name == "cursor":
            return home / ".cursor" / "mcp.json"
        raise ConnectError(f"unknown client {self.name!r}")


CLIENTS = {
    "claude-code": ClientSpec("claude-code", "Claude Code", "json", http=True),
    "claude-desktop": ClientSpec("claude-desktop", "Claude Desktop", "json", http=False),
    "codex": ClientSpec("codex", "Codex", "toml", http=True),
    "cursor": ClientSpec("cursor", "Cursor", "json", http=True),
}


def server_entry(client: ClientSpec, *, token: str, url: str, home: Path, http: bool) -> dict:
    """The server's entry in the client's config (the value under its name)."""
    if http:
        if not client.http:
            raise ConnectError(f"{client.label} cannot send a bearer header to a remote server; use the stdio "
                               "bridge (drop --http).")
        mcp_url = url.rstrip("/") + "/mcp"
        if client.name == "codex":
            # Codex refuses inline tokens: it reads the token from this variable.
            return {"url": mcp_url, "bearer_token_env_var": "VETTED_TOKEN"}
        entry = {"url": mcp_url, "headers": {"Authorization": f"Bearer {token}"}}
        if client.name == "claude-code":
            entry = {"type": "http", **entry}
        return entry
    env = {"VETTED_TOKEN": token, "VETTED_HOME": str(home)}
    if url.rstrip("/") != DEFAULT_URL:
        env["VETTED_URL"] = url.rstrip("/")
    entry = {"command": sys.executable, "args": [str(PROJECT_DIR / "manage.py"), "mcp_stdio"], "env": env}
    if client.name == "claude-code":
        entry = {"type": "stdio", **entry}
    return entry


def render(client: ClientSpec, entry: dict) -> str:
    """The block to paste into the client's config file."""
    if client.fmt == "toml":
        doc = tomlkit.document()
        servers = tomlkit.table(is_super_table=True)
        servers.add(SERVER_NAME, _toml_table(entry))
        doc.add("mcp_servers", servers)
        return tomlkit.dumps(doc).strip()
    return json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)


def _toml_table(entry: dict):
    table = tomlkit.table()
    for key, value in entry.items():
        if isinstance(value, dict):
            inline = tomlkit.inline_table()
            inline.update(value)
            table.add(key, inline)
        else:
            table.add(key, value)
    return table


def cli_command(client: ClientSpec, entry: dict) -> str | None:
    """The client's own command that adds the same entry, where it has one."""
    if client.name == "claude-code":
        return f"claude mcp add-json {SERVER_NAME} '{json.dumps(entry)}' --scope user"
    return None


def check_target(client: ClientSpec, path: Path) -> None:
    """Refuse early (before any token is issued) a config file we could not merge into."""
    if path.exists():
        _merged_text(client, path.read_text(encoding="utf-8"), path, {})


def _merged_text(client: ClientSpec, original: str | None, path: Path, entry: dict) -> str:
    if client.fmt == "toml":
        try:
            doc = tomlkit.parse(original or "")
        except tomlkit.exceptions.ParseError as exc:
            raise ConnectError(f"{path} is not valid TOML ({exc}); fix it or pass --config another file.") from None
        servers = doc.get("mcp_servers")
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc["mcp_servers"] = servers
        elif not isinstance(servers, dict):
            raise ConnectError(f"{path}: mcp_servers is not a table.")
        if SERVER_NAME in servers:
            del servers[SERVER_NAME]
        servers[SERVER_NAME] = _toml_table(entry)
        return tomlkit.dumps(doc)
    try:
        data = json.loads(original) if original and original.strip() else {}
    except ValueError as exc:
        raise ConnectError(f"{path} is not valid JSON ({exc}); fix it or pass --config another file.") from None
    if not isinstance(data, dict):
        raise ConnectError(f"{path} does not hold a JSON object.")
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConnectError(f"{path}: mcpServers is not an object.")
    servers[SERVER_NAME] = entry
    return json.dumps(data, indent=2) + "\n"


def merge_into(client: ClientSpec, entry: dict, path: Path | None = None) -> tuple[Path, Path | None]:
    """Put the entry into the client's config file, keeping everything else.

    The old file is copied to ``<name>.bak-<timestamp>`` first; the new one is
    written to a temporary file and renamed into place (never half-written),
    readable only by the owner because it holds the token. Returns the path
    and the backup (None when the file did not exist)."""
    path = Path(path or client.config_path()).expanduser()
    original = path.read_text(encoding="utf-8") if path.exists() else None
    text = _merged_text(client, original, path, entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if original is not None:
        backup = path.with_name(f"{path.name}.bak-{datetime.now():%Y%m%d-%H%M%S}")
        backup.write_text(original, encoding="utf-8")
        os.chmod(backup, 0o600)
    tmp = path.with_name(f".{path.name}.vetted-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path, backup


def snippets(token: str, *, url: str, home: Path) -> list[dict]:
    """Every client's config block for one token (the agents page shows them
    next to the new token): label, target file, text, and a CLI command."""
    result = []
    for client in CLIENTS.values():
        entry = server_entry(client, token=token, url=url, home=home, http=False)
        result.append({"client": client.name, "label": client.label, "path": str(client.config_path()),
                       "text": render(client, entry), "command": cli_command(client, entry)})
    return result
