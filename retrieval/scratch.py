"""A throwaway database for benchmarks and evaluations.

Points Django's default connection at a fresh SQLite file in a temporary
folder, migrates it, and restores the real database afterwards, so a
benchmark can never touch the user's memory.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections


@contextlib.contextmanager
def scratch_database(keep: bool = False) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="vetted-scratch-"))
    conn = connections["default"]
    conn.close()
    original = conn.settings_dict["NAME"]
    conn.settings_dict["NAME"] = str(folder / "scratch.sqlite3")
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield folder
    finally:
        conn.close()
        conn.settings_dict["NAME"] = original
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def scratch_reviewer() -> User:
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    return user_model.objects.filter(username="bench").first() or user_model.objects.create_superuser(
        "bench", "bench@example.invalid", None
    )
