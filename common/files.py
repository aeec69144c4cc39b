"""Writing files so that no reader ever sees one half-written: the one
helper every writer uses (exports, Markdown notes, client configs, the
secret key, backups). Standard library only: settings.py imports it."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _default_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def replaced_atomically(path: Path | str) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path`` (nothing is created
    there); when the block ends without an error, whatever was written to it
    is renamed onto ``path`` (atomic on one file system), otherwise it is
    removed and ``path`` is left as it was. For files produced by something
    else, such as SQLite's backup API."""
    path = Path(path)
    tmp_path = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_atomic(path: Path | str, data: bytes | str, *, mode: int | None = None, exclusive: bool = False) -> None:
    """Write ``data`` (str as UTF-8) to ``path`` through a temporary file in
    the same folder and a rename: readers see the old file or the new one.

    ``mode``: the file's permissions (default: the usual 0o666 minus the
    umask). The temporary file is private (0o600) from its creation, so a
    secret is never readable by others, not even for a moment.
    ``exclusive``: never replace an existing file; raises FileExistsError if
    ``path`` exists (when two processes race, exactly one wins)."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp_path = Path(tmp)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.chmod(tmp_path, _default_mode() if mode is None else mode)
        if exclusive:
            try:
                os.link(tmp_path, path)
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links
                if path.exists():
                    raise FileExistsError(path) from None
                os.replace(tmp_path, path)
        else:
            os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def serve_lock_path() -> Path:
    """<database>.serve-lock: `serve` holds a shared lock on it for its whole
    life, so `restore` can tell for certain that a server has the database open."""
    from django.conf import settings
    from django.db import connections

    from dbengine import database_engine

    database = connections["default"]
    return database_engine(database).serve_lock_path(database.settings_dict, Path(settings.VETTED_HOME))
