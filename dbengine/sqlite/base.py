"""Django's SQLite backend, with sqlite-vec loaded on every connection.

Some Pythons ship a stdlib ``sqlite3`` that cannot load extensions (pyenv builds
without ``--enable-loadable-sqlite-extensions``, macOS system Python). There we
use the ``sqlean`` drop-in driver instead. Subclassing Django's backend is not
enough: ``django/db/backends/sqlite3/base.py`` does ``from sqlite3 import dbapi2
as Database`` at import time and builds its cursor class on ``Database.Cursor``,
and ``creation.py``/``schema.py`` import ``sqlite3`` too. So the driver must be
in ``sys.modules`` *before* Django's backend is first imported; we check
afterwards that it really is the one Django uses and fail loudly otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3 as _stdlib_sqlite3
import sys

from django.core.exceptions import ImproperlyConfigured


def _stdlib_can_load_extensions() -> bool:
    return hasattr(_stdlib_sqlite3.Connection, "enable_load_extension")


def _choose_driver():
    """Return the dbapi2 module to use: stdlib when capable, else sqlean."""
    if _stdlib_can_load_extensions():
        return _stdlib_sqlite3.dbapi2
    try:
        import sqlean
        import sqlean.dbapi2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImproperlyConfigured(
            "This Python's sqlite3 module cannot load extensions, so sqlite-vec "
            "cannot be loaded, and the fallback driver 'sqlean-py' is not "
            "installed. Run `make install` (or `pip install sqlean-py`)."
        ) from exc
    if "django.db.backends.sqlite3.base" in sys.modules:
        # Too late to swap: Django already bound the stdlib module.
        raise ImproperlyConfigured(
            "django.db.backends.sqlite3 was imported before "
            "dbengine.sqlite could install the sqlean driver. "
            "Use ENGINE='dbengine.sqlite' for every SQLite database."
        )
    sys.modules["sqlite3"] = sqlean
    sys.modules["sqlite3.dbapi2"] = sqlean.dbapi2
    return sqlean.dbapi2


DRIVER = _choose_driver()

from django.db.backends.sqlite3 import base as _django_sqlite  # noqa: E402

# ``Database`` is a module global of Django's backend, not part of its stubs.
if _django_sqlite.Database is not DRIVER:  # type: ignore[attr-defined]
    raise ImproperlyConfigured(
        f"Django's SQLite backend uses {_django_sqlite.Database.__name__!r} "  # type: ignore[attr-defined]
        f"but Vetted selected {DRIVER.__name__!r}; sqlite-vec would not load."
    )


def _vec0_path() -> str:
    """The sqlite-vec loadable extension bundled in its wheel, found without
    importing the package: its __init__ imports numpy (about 0.1 s) for a helper
    Vetted does not use, and every command opens this backend."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImproperlyConfigured("The sqlite-vec package is not installed (pip install sqlite-vec).")
    return os.path.normpath(os.path.join(next(iter(spec.submodule_search_locations)), "vec0"))


VEC0_PATH = _vec0_path()

DRIVER_NAME = "sqlite3 (stdlib)" if DRIVER is _stdlib_sqlite3.dbapi2 else "sqlean"


class DatabaseWrapper(_django_sqlite.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        conn = super().get_new_connection(conn_params)
        # Load vec0 on *every* connection (including test clones and the
        # connections Django opens per thread); retrieval relies on it.
        load_vec(conn)
        return conn


def load_vec(conn) -> None:
    """Load sqlite-vec into a driver connection (vec0 tables are part of the
    schema, so anything that reads or checks the database needs it)."""
    conn.enable_load_extension(True)
    try:
        conn.load_extension(VEC0_PATH)
    finally:
        # Do not leave extension loading open to SQL (load_extension()).
        conn.enable_load_extension(False)
