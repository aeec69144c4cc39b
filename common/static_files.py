"""Static files: hashed names, compressed copies, long cache lifetimes.

`collectstatic` copies every app's files into STATIC_ROOT under content-hashed
names (``site.3f2a9c….css``, listed in ``staticfiles.json``) with a gzip and a
brotli copy beside each; WhiteNoise (middleware, memory_site/settings.py)
serves them with ``Cache-Control: max-age=31536000, immutable`` and the
encoding the browser asked for. A changed file gets a new name, so a browser
never keeps a stale one.

`make run` collects; `manage.py serve` collects by itself when the collected
copy is missing or older than a source file (`ensure_collected`), so a plain
`serve` after a `git pull` never sends yesterday's CSS, and a page never fails
on a name missing from the manifest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

# Brotli at its best quality (11) costs ~4 s per MB here; the vendored API
# browser bundles (Swagger UI, Redoc: several MB, opened by developers only)
# get quality 9 (15x faster, 3% bigger), the site's own small files the best.
BEST_QUALITY_UP_TO = 128 * 1024


class _Compressor(Compressor):
    @staticmethod
    def compress_brotli(data: bytes) -> bytes:
        import brotli

        return bytes(brotli.compress(data, quality=11 if len(data) <= BEST_QUALITY_UP_TO else 9))


class VettedStaticStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's manifest storage, compressing only the hashed names (the
    ones pages link to; the plain-named copies stay for the few references no
    template can hash, such as the icon inside manifest.webmanifest) and
    never source maps (developer tools fetch them, uncompressed is fine)."""

    def create_compressor(self, **kwargs: Any) -> Compressor:
        return _Compressor(**kwargs)

    def compress_files(self, paths: Iterable[str]) -> Iterator[tuple[str, str]]:
        hashed = set(self.hashed_files.values())
        yield from super().compress_files([p for p in paths if p in hashed and not p.endswith(".map")])


def _sources() -> Iterator[Path]:
    for finder in finders.get_finders():
        for path, storage in finder.list(["CVS", ".*", "*~"]):
            yield Path(storage.path(path))


def is_current() -> bool:
    """The collected copy exists and no source file is newer than its manifest."""
    manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
    if not manifest.exists():
        return False
    collected_at = manifest.stat().st_mtime
    return all(source.stat().st_mtime <= collected_at for source in _sources())


class StaticFilesStale(Exception):
    """The collected copy is out of date and this process cannot rewrite it."""


def ensure_collected() -> bool:
    """Run collectstatic unless the collected copy is current; True if it ran.

    Under a lock beside STATIC_ROOT: two servers starting at once (the test
    suite starts several) must not write the same files together. A server
    whose checkout is read-only (the systemd unit) needs a current copy made
    beforehand (`make static`), and is told so.
    """
    if is_current():
        return False
    root = Path(settings.STATIC_ROOT)
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        lock = open(root.parent / f".{root.name}.lock", "a")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise StaticFilesStale(
            f"The static files in {root} are missing or older than their sources, and cannot be written "
            f"({exc.strerror}). Run `make static` (or `python manage.py collectstatic --noinput`) as the "
            "checkout's owner, or point VETTED_STATIC_ROOT at a writable folder."
        ) from None
    with lock:
        try:
            import fcntl
        except ImportError:  # not POSIX: one server at a time, then
            pass
        else:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if is_current():
            return False
        call_command("collectstatic", interactive=False, verbosity=0)
        # collectstatic keeps the mtime of an unchanged manifest; touch it so
        # is_current() compares against this run.
        (root / "staticfiles.json").touch()
        return True
