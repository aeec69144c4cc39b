"""The first-run setup code: proof that whoever creates the reviewer account
can read this machine's Vetted data folder.

Until an account exists, /setup/ would otherwise belong to the first local
process that reaches it. So, as notebook servers do, creating the account
takes a one-time code kept in ``VETTED_HOME/setup-code`` (mode 600: only the
account running Vetted can read it). ``serve`` creates it and prints the
setup address with the code on its console; the setup page creates it too
when it is missing (any launcher works) and says where to find it. It is
deleted once the reviewer account exists.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from django.conf import settings

from common.files import write_atomic

FILE_NAME = "setup-code"


def path() -> Path:
    return Path(settings.VETTED_HOME) / FILE_NAME


def ensure() -> str:
    """The current code, created (mode 600) if there is none. A file anyone
    else could read is replaced: its code may have been seen."""
    where = path()
    try:
        if where.stat().st_mode & 0o077:
            where.unlink()
    except FileNotFoundError:
        pass
    try:
        write_atomic(where, secrets.token_hex(12), mode=0o600, exclusive=True)
    except FileExistsError:
        pass  # another process made it first: use that one
    return where.read_text(encoding="ascii").strip()


def matches(given) -> bool:
    """Whether ``given`` is the current code (compared in constant time)."""
    try:
        expected = path().read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    given = given.strip() if isinstance(given, str) else ""
    return bool(expected) and hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("ascii"))


def discard() -> None:
    path().unlink(missing_ok=True)


def setup_url(host: str, port: int, code: str) -> str:
    """The address that opens the setup page with the code filled in; setup is
    for this machine only, so a wildcard bind address becomes loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]"}.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/setup/?code={code}"


def first_run_notice(host: str, port: int, code: str, *, console: bool) -> str:
    """What ``serve`` prints when no account exists: the address with the code
    on a terminal; on anything else (a log file others may read, such as the
    one a stdio bridge starts the daemon with) where to find the code."""
    url = setup_url(host, port, code)
    if console:
        return f"First run: create the reviewer account at {url}"
    return (
        f"First run: create the reviewer account at {url.split('?')[0]} with the setup code in {path()} "
        "(kept out of this log)."
    )
