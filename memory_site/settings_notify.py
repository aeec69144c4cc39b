"""Notification settings (notify/): the channels and their timing, read
from the environment like every other setting (a bad value stops the
process, naming the variable). Imported by settings.py; see
docs/notifications.md."""

from __future__ import annotations

import re

from django.core.exceptions import ImproperlyConfigured

from common.env import env_choice, env_float, env_int, env_list, env_str

# --------------------------------------------------------------------------- notifications (notify/)
# The outbox is always written; a channel is on when its variables are set.
# See docs/notifications.md. Bad values stop the process, naming the variable.
# VETTED_PUBLIC_URL (above, with OAuth) makes the links in notifications.
VETTED_NOTIFY_MIN_SECONDS = env_int("VETTED_NOTIFY_MIN_SECONDS", 60, minimum=0, maximum=24 * 3600)
# An urgent notice (a new dispute) skips the spacing above at most once per
# agent in this many seconds; an agent cycling dispute and withdraw is told
# with the next regular message after that.
VETTED_NOTIFY_URGENT_PER_AGENT_SECONDS = env_int(
    "VETTED_NOTIFY_URGENT_PER_AGENT_SECONDS", 600, minimum=0, maximum=24 * 3600
)
# A batch waits until no event came for this long (so a burst is one message).
VETTED_NOTIFY_QUIET_SECONDS = env_float("VETTED_NOTIFY_QUIET_SECONDS", 1.0, minimum=0.0, maximum=600.0)
# Which spaces notifications and the feed may name, by slug or by kind
# ("team" is every team space). Each person is told only of the spaces they
# decide in among these (notify/recipients.py).
VETTED_NOTIFY_SPACES = env_list("VETTED_NOTIFY_SPACES", ["team", "system"])
# The setting's name before spaces is refused, never read: a deployment that
# still set it would otherwise run with the default spaces without a word.
# (Its name is built, not written out, so that the configuration reference,
# which lists every VETTED_ variable the code reads, does not offer it.)
_OLD_NAME = "_".join(("VETTED_NOTIFY", "SCOPES"))
if env_str(_OLD_NAME, ""):
    raise ImproperlyConfigured(
        f"{_OLD_NAME} is not a setting; rename it VETTED_NOTIFY_SPACES (the same slugs and/or kinds)."
    )
for _space in VETTED_NOTIFY_SPACES:
    if not re.fullmatch(r"[a-z0-9][a-z0-9:._-]{0,63}", _space):
        raise ImproperlyConfigured(
            f"VETTED_NOTIFY_SPACES: {_space!r} is not a space slug or kind; "
            "give slugs (acme, personal:sam) and/or kinds (personal, team, system), comma-separated."
        )
VETTED_WEBHOOK_URL = env_str("VETTED_WEBHOOK_URL", "")
if VETTED_WEBHOOK_URL and not VETTED_WEBHOOK_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"VETTED_WEBHOOK_URL={VETTED_WEBHOOK_URL!r} must start with http:// or https://.")
VETTED_WEBHOOK_FORMAT = env_choice("VETTED_WEBHOOK_FORMAT", "json", ["json", "ntfy", "slack"])
VETTED_WEBHOOK_SECRET = env_str("VETTED_WEBHOOK_SECRET", "")
VETTED_NOTIFY_EMAIL = env_list("VETTED_NOTIFY_EMAIL", [])
for _address in VETTED_NOTIFY_EMAIL:
    if "@" not in _address or any(c in _address for c in " \r\n<>,"):
        raise ImproperlyConfigured(f"VETTED_NOTIFY_EMAIL: {_address!r} is not an email address.")
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = env_str("VETTED_EMAIL_HOST", "localhost")
_email_security = env_choice("VETTED_EMAIL_SECURITY", "starttls", ["starttls", "ssl", "none"])
EMAIL_PORT = env_int(
    "VETTED_EMAIL_PORT", {"starttls": 587, "ssl": 465, "none": 25}[_email_security], minimum=1, maximum=65535
)
EMAIL_HOST_USER = env_str("VETTED_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = env_str("VETTED_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = _email_security == "starttls"
EMAIL_USE_SSL = _email_security == "ssl"
EMAIL_TIMEOUT = 15
DEFAULT_FROM_EMAIL = env_str("VETTED_EMAIL_FROM", "vetted@localhost")
