"""Where a PostgreSQL database is, for people and for the server's own tools
(pg_dump, pg_restore); no driver needed."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote


def where(settings_dict: dict[str, Any]) -> str:
    host = settings_dict.get("HOST") or "localhost"
    port = settings_dict.get("PORT") or "5432"
    place = f"socket folder {host}" if str(host).startswith("/") else f"{host}:{port}"
    return f"database {settings_dict.get('NAME')!r} on {place}"


def _uri(settings_dict: dict[str, Any]) -> str:
    """The database as a libpq URI without the password (which is never printed:
    pg_dump reads it from PGPASSWORD or ~/.pgpass)."""
    user = quote(str(settings_dict.get("USER") or ""), safe="")
    host = str(settings_dict.get("HOST") or "localhost")
    port = settings_dict.get("PORT") or ""
    name = quote(str(settings_dict["NAME"]), safe="")
    if host.startswith("/"):
        return f"postgresql://{user + '@' if user else ''}/{name}?host={quote(host)}"
    return f"postgresql://{user + '@' if user else ''}{host}{':' + str(port) if port else ''}/{name}"


def dump_command(settings_dict: dict[str, Any], path: str) -> str:
    return f"pg_dump --format=custom --file={path} '{_uri(settings_dict)}'"


def restore_command(settings_dict: dict[str, Any], path: str) -> str:
    return f"pg_restore --clean --if-exists --no-owner --single-transaction --dbname='{_uri(settings_dict)}' {path}"
