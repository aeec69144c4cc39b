"""Files only the account running Vetted may read (the secret key, the
first-run setup code), created once and never seen half-written."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def create_once(path: Path, content: str) -> str:
    """Write ``content`` to ``path`` (mode 600) unless the file exists; return
    what the file holds. A private temporary file is linked into place, so
    the content is never readable by others nor seen half-written, and when
    two processes race exactly one link wins (the other reads it)."""
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(content)
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            except OSError:  # a filesystem without hard links
                if not path.exists():
                    os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return path.read_text(encoding="ascii").strip()
