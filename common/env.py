"""Typed readers for environment variables that fail loudly on bad values.

A typo in a deployment variable must stop the process with a message naming
the variable, the bad value and what is allowed, instead of silently falling
back to a default (healthchecks' hc/settings.py does the same).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str) -> str:
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use one of: {', '.join(sorted(_TRUE | _FALSE))}.")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below the minimum {minimum}.")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name}={number} is above the maximum {maximum}.")
    return number


def env_float(name: str, default: float, *, minimum: float, maximum: float) -> float:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if not minimum <= number <= maximum:
        raise ImproperlyConfigured(f"{name}={number} is outside {minimum}-{maximum}.")
    return number


def env_choice(name: str, default: str, choices: list[str]) -> str:
    value = _raw(name)
    if value is None:
        return default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not allowed; use one of: {', '.join(choices)}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ImproperlyConfigured(f"{name}={value!r} lists nothing; give comma-separated values or unset it.")
    return items


def env_path(name: str, default: Path) -> Path:
    value = _raw(name)
    path = default if value is None else Path(value).expanduser()
    return path.resolve()


def env_kinds(name: str, default: dict[str, int]) -> dict[str, int]:
    """Parse ``kind:days,kind:days`` into {kind: default review period in days}.

    The value *extends* the built-in kinds (a built-in kind listed again gets
    the new period), so adding a kind never silently drops another.
    """
    value = _raw(name)
    kinds = dict(default)
    if value is None:
        return kinds
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        kind, sep, days = item.partition(":")
        kind = kind.strip().lower()
        if not sep or not kind.isidentifier() or not kind.islower():
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not 'kind:days' (kind: lowercase letters, "
                "digits and underscores, e.g. 'runbook:90')."
            )
        try:
            period = int(days)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r}: days must be an integer.") from None
        if not 1 <= period <= 3650:
            raise ImproperlyConfigured(f"{name}: {item!r}: days must be between 1 and 3650.")
        kinds[kind] = period
    return kinds


def env_base_url(name: str, default: str) -> str:
    """A base URL: http(s), a host (and port), no path, query or fragment; the
    trailing slash is dropped (an OAuth issuer is compared as a string)."""
    from urllib.parse import urlsplit

    value = (_raw(name) or default).rstrip("/")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a base URL; write the scheme and host (and port), no path, "
            "e.g. https://vetted.example.com"
        )
    return value


# --------------------------------------------------------------------------- postgres
POSTGRES_SCHEMES = ("postgresql", "postgres")


def env_database_url(name: str) -> dict[str, object] | None:
    """A Django DATABASES entry for ``postgresql://user:password@host:port/dbname?options``,
    or None when the variable is unset (SQLite). ``?host=/dir`` gives a Unix
    socket folder (as libpq does); any other query parameter (sslmode,
    sslrootcert, connect_timeout, ...) is passed on to libpq as it is."""
    value = _raw(name)
    return None if value is None else database_entry(value, name)


def database_entry(value: str, name: str) -> dict[str, object]:
    """env_database_url's parsing of one URL; ``name`` (the variable or option
    it came from) is named in every error."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"{name} is not a URL ({exc}); write postgresql://user:password@host:5432/dbname."
        ) from None
    if parts.scheme not in POSTGRES_SCHEMES:
        raise ImproperlyConfigured(
            f"{name} must start with postgresql:// (got {parts.scheme or 'no scheme'}://); "
            "unset it to use the SQLite file in VETTED_HOME."
        )
    options = dict(parse_qsl(parts.query, keep_blank_values=False))
    host = options.pop("host", "") or (unquote(parts.hostname) if parts.hostname else "")
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or "/" in dbname:
        raise ImproperlyConfigured(f"{name} names no database; write postgresql://user:password@host:5432/dbname.")
    if not host:
        raise ImproperlyConfigured(
            f"{name} names no host; add one (@db.example.com) or a socket folder (?host=/run/postgresql)."
        )
    return {
        "ENGINE": "dbengine.postgres",
        "NAME": dbname,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(port or ""),
        "OPTIONS": options,
    }
