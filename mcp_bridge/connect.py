"""`manage.py connect`: a careful merge of a client's block (built by
common/clients.py) into its config file, keeping everything else."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import tomlkit

from common.clients import (
    CLIENTS,
    DEFAULT_URL,
    GLOBAL_INSTRUCTIONS,
    HTTP_SERVER_NAME,
    SERVER_NAME,
    ClientSpec,
    ConnectError,
    cli_command,
    codex_token_help,
    name_for,
    render,
    server_entry,
    toml_table,
)
from common.files import write_atomic


def check_target(client: ClientSpec, path: Path) -> None:
    """Refuse early (before any token is issued) a config file we could not merge into."""
    if path.exists():
        _merged_text(client, path.read_text(encoding="utf-8"), path, [])


def _merged_text(client: ClientSpec, original: str | None, path: Path, entries: list[dict]) -> str:
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
        for entry in entries:
            name = name_for(entry)
            if name in servers:
                del servers[name]
            servers[name] = toml_table(entry)
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
    for entry in entries:
        servers[name_for(entry)] = entry
    return json.dumps(data, indent=2) + "\n"


def merge_into(client: ClientSpec, entry: dict | list[dict], path: Path | None = None) -> tuple[Path, Path | None]:
    """Put the entry (or entries: stdio and HTTP in one write, so one backup
    holds the file as it was) into the client's config file, keeping everything else.

    The old file is copied to ``<name>.bak-<timestamp>`` first; the new one is
    written to a temporary file and renamed into place (never half-written),
    readable only by the owner because it holds the token. Returns the path
    and the backup (None when the file did not exist)."""
    path = Path(path or client.config_path()).expanduser()
    original = path.read_text(encoding="utf-8") if path.exists() else None
    text = _merged_text(client, original, path, entry if isinstance(entry, list) else [entry])
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if original is not None:
        backup = path.with_name(f"{path.name}.bak-{datetime.now():%Y%m%d-%H%M%S}")
        write_atomic(backup, original, mode=0o600)
    write_atomic(path, text, mode=0o600)
    return path, backup


__all__ = [
    "CLIENTS",
    "DEFAULT_URL",
    "GLOBAL_INSTRUCTIONS",
    "HTTP_SERVER_NAME",
    "SERVER_NAME",
    "ClientSpec",
    "ConnectError",
    "check_target",
    "cli_command",
    "codex_token_help",
    "merge_into",
    "name_for",
    "render",
    "server_entry",
]
