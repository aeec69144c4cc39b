"""No secret reaches a log line.

Secrets that can travel in a URL (an agent token pasted into a query
string, a feed URL's key, OAuth's ``code`` and ``state``, the first-run
setup code) would otherwise be written verbatim by uvicorn's access log,
Django's request log or runserver. Every log record is scrubbed when it is
created (a log record factory, so it holds for every logger and handler,
whoever configured them): the value of any secret-bearing query parameter
and anything shaped like an agent token become ``[redacted]``.

The one list of secret parameter names is SECRET_PARAMETERS.
"""

from __future__ import annotations

import logging
import re

# Query parameters whose value is a secret, whatever the endpoint. Names
# ending in _token, _secret, _key or _password are secret too.
SECRET_PARAMETERS = (
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "key",
    "api_key",
    "apikey",
    "secret",
    "client_secret",
    "code",
    "code_verifier",
    "state",
    "password",
    "passwd",
    "setup_code",
    "signature",
    "sig",
)
REDACTED = "[redacted]"

_NAMES = "|".join(re.escape(name) for name in sorted(SECRET_PARAMETERS, key=len, reverse=True))
_PARAMETER_RE = re.compile(rf"(?i)([?&;](?:{_NAMES}|[\w.-]*?(?:_token|_secret|_key|_password))=)[^&;#\s\"']*")
# Agent tokens (reviews.actions: "vt_" + URL-safe base64), anywhere in a line.
_TOKEN_RE = re.compile(r"vt_[A-Za-z0-9_-]+")


def scrub(text: str) -> str:
    """``text`` with every secret query value and agent token replaced."""
    if "=" not in text and "vt_" not in text:
        return text
    return _TOKEN_RE.sub(REDACTED, _PARAMETER_RE.sub(rf"\1{REDACTED}", text))


def _scrubbed(value):
    return scrub(value) if isinstance(value, str) else value


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """Scrub a record's message and its string arguments in place (arguments
    stay separate: uvicorn's access formatter reads them one by one)."""
    record.msg = _scrubbed(record.msg)
    if isinstance(record.args, tuple):
        record.args = tuple(_scrubbed(arg) for arg in record.args)
    elif isinstance(record.args, dict):
        record.args = {key: _scrubbed(value) for key, value in record.args.items()}
    return record


def install() -> None:
    """Wrap the current log record factory (once per process)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "vetted_scrubs", False):
        return

    def factory(*args, **kwargs):
        return scrub_record(previous(*args, **kwargs))

    factory.vetted_scrubs = True  # type: ignore[attr-defined]  # marks our factory, so installing twice is a no-op
    logging.setLogRecordFactory(factory)
