"""The vault's settings (portability/vault), read from the
environment like every other setting. Off unless both are set: then `serve`
keeps this folder in step for this person (one daemon watches it: the one
holding its lock file). Imported by settings.py; see docs/instruction-files.md."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from common.env import env_str

VETTED_VAULT = env_str("VETTED_VAULT", "")
VETTED_VAULT_PERSON = env_str("VETTED_VAULT_PERSON", "")
if bool(VETTED_VAULT) != bool(VETTED_VAULT_PERSON):
    raise ImproperlyConfigured(
        "VETTED_VAULT and VETTED_VAULT_PERSON go together: set both (a folder and an account name) or neither."
    )
