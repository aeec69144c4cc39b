"""MCP client configuration: the exact block each client (Claude Code, Claude
Desktop, Codex, Cursor) expects for Vetted, and the instruction text for the
client's global instructions.

Pure data and functions (no Django, no gateway): `manage.py connect` merges
these blocks into config files (mcp_bridge/connect.py) and the inbox's agents
page shows them next to a new token.

stdio (the default) runs the bridge with absolute paths, so the client needs
nothing on its PATH and the bridge can start the daemon when it is down.
HTTP points the client straight at /mcp with the token in a header, for
clients that support remote servers with headers.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from .defaults import DEFAULT_URL, PROJECT_DIR
from .guidance import GUIDANCE

SERVER_NAME = "vetted"
# The HTTP entry has a name of its own, so a client can hold both (stdio for
# this machine, HTTP for a daemon elsewhere, or to compare) side by side.
HTTP_SERVER_NAME = "vetted-http"


def name_for(entry: dict) -> str:
    """The server name an entry goes under: HTTP entries have a URL."""
    return HTTP_SERVER_NAME if "url" in entry else SERVER_NAME


# One source for the guidance (also the MCP server's instructions and prompt).
GLOBAL_INSTRUCTIONS = GUIDANCE


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
        if self.name == "generic":
            raise ConnectError("A generic MCP client has no usual config file: pass --config PATH with --write.")
        raise ConnectError(f"unknown client {self.name!r}")

    def target_text(self) -> str:
        """Where the block goes, for the heading above it."""
        if self.name == "generic":
            return "your MCP client's config (its mcpServers object)"
        return str(self.config_path())


CLIENTS = {
    "claude-code": ClientSpec("claude-code", "Claude Code", "json", http=True),
    "claude-desktop": ClientSpec("claude-desktop", "Claude Desktop", "json", http=False),
    "codex": ClientSpec("codex", "Codex", "toml", http=True),
    "cursor": ClientSpec("cursor", "Cursor", "json", http=True),
    # Any other client that reads the common mcpServers JSON (the MCP Inspector, Windsurf, ...).
    "generic": ClientSpec("generic", "A generic MCP client", "json", http=True),
}


def stdio_command() -> list[str]:
    """What the client runs for the stdio entry: the installed `vetted-mcp`
    script when it runs this very code (beside this Python, installed from
    this checkout or as a package), else this checkout's `manage.py mcp_stdio`
    with this Python. An editable install of another checkout (one virtual
    environment shared by several) would run that checkout's bridge."""
    script = Path(sys.executable).with_name("vetted-mcp")
    if os.access(script, os.X_OK) and _installed_here():
        return [str(script)]
    return [sys.executable, str(PROJECT_DIR / "manage.py"), "mcp_stdio"]


def _installed_here() -> bool:
    from importlib import metadata

    try:
        dist = metadata.distribution("vetted")
    except metadata.PackageNotFoundError:
        return False
    direct = dist.read_text("direct_url.json")
    if direct:
        url = json.loads(direct).get("url", "")
        if json.loads(direct).get("dir_info", {}).get("editable") and url.startswith("file://"):
            return Path(url.removeprefix("file://")).resolve() == PROJECT_DIR.resolve()
    return Path(str(dist.locate_file("memory_site"))).resolve() == (PROJECT_DIR / "memory_site").resolve()


def server_entry(client: ClientSpec, *, token: str, url: str, home: Path, http: bool) -> dict:
    """The server's entry in the client's config (the value under its name)."""
    if http:
        if not client.http:
            raise ConnectError(
                f"{client.label} cannot send a bearer header to a remote server; use the stdio bridge (drop --http)."
            )
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
    command, *args = stdio_command()
    entry = {"command": command, "args": args, "env": env}
    if client.name == "claude-code":
        entry = {"type": "stdio", **entry}
    return entry


def render(client: ClientSpec, *entries: dict) -> str:
    """The block to paste into the client's config file (one entry, or the
    stdio and the HTTP entries side by side under their own names)."""
    if client.fmt == "toml":
        doc = tomlkit.document()
        servers = tomlkit.table(is_super_table=True)
        for entry in entries:
            servers.add(name_for(entry), toml_table(entry))
        doc.add("mcp_servers", servers)
        return tomlkit.dumps(doc).strip()
    return json.dumps({"mcpServers": {name_for(entry): entry for entry in entries}}, indent=2)


def toml_table(entry: dict):
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
        return f"claude mcp add-json {name_for(entry)} '{json.dumps(entry)}' --scope user"
    return None


def codex_token_help(token: str, shell: str = "") -> str:
    """Where Codex, connected over HTTP, finds the token: in its own
    environment (it refuses a token written in config.toml). ``shell``: the
    user's $SHELL, to name the profile that shell reads."""
    name = Path(shell).name
    if name == "fish":
        profile, line = "~/.config/fish/config.fish", f"set -gx VETTED_TOKEN {token}"
    else:
        profile = {"zsh": "~/.zshrc", "bash": "~/.bashrc"}.get(name, "~/.profile")
        line = f"export VETTED_TOKEN={token}"
    return (
        "# Codex reads the token from its own environment (it refuses one written in config.toml):\n"
        f"# add this line to {profile} (your shell reads it), then start Codex from a new terminal:\n"
        f"{line}\n"
        "# A Codex started elsewhere (an IDE, a launcher) must get VETTED_TOKEN in its environment the same way.\n"
        "# Instead of bearer_token_env_var, config.toml can name the variable for the whole header:\n"
        '#   env_http_headers = { "Authorization" = "VETTED_AUTHORIZATION" }\n'
        f'# with VETTED_AUTHORIZATION="Bearer {token}" in that profile.'
    )


def snippets(token: str, *, url: str, home: Path) -> list[dict]:
    """Every client's config block for one token (the agents page shows them
    next to the new token): label, target file, text, and a CLI command."""
    result = []
    for client in CLIENTS.values():
        entry = server_entry(client, token=token, url=url, home=home, http=False)
        result.append(
            {
                "client": client.name,
                "label": client.label,
                "path": client.target_text(),
                "text": render(client, entry),
                "command": cli_command(client, entry),
            }
        )
    return result
