"""Django's PostgreSQL backend, checked for what Vetted needs .

Selected by ``VETTED_DATABASE_URL=postgresql://…`` (common/env.py). On
the first connection of a process it fails loudly, naming the one missing
piece, instead of letting a migration or a search fail later with an
obscure error:

- the server cannot be reached: the host, port and database it tried, and
  the driver's own reason;
- PostgreSQL older than MIN_SERVER (Django 5.2's floor);
- the ``vector`` extension (pgvector) not available on the server, or older
  than MIN_VECTOR (HNSW indexes came in 0.5.0), with how to install it;
- ``pg_trgm`` (identifier search) not available.

The extensions themselves are created by migration retrieval/0001 (which
says what to run as a superuser when the connecting role may not).
"""

from __future__ import annotations

import threading

import psycopg as _psycopg
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql import base as _django_pg

from .where import where

MIN_SERVER = (14, 0)
MIN_VECTOR = (0, 5, 0)
# HNSW search breadth (pgvector's default is 40), the one place it is set (a
# startup option of every connection: no round trip per query). Measured with
# `bench_search --ef-search`: recall@8 against exact search 0.989 at 10k
# records with 100; at 5k, 0.9951 / 0.9972 / 0.9979 / 1.0000 with
# 100 / 120 / 160 / 200 (docs/benchmarks.md). Iterative scans (pgvector 0.8) keep a filtered KNN (one space,
# deliverable only) from returning fewer than k rows.
EF_SEARCH = 200
SESSION_OPTIONS = f"-c hnsw.ef_search={EF_SEARCH} -c hnsw.iterative_scan=relaxed_order"

INSTALL_VECTOR = (
    "Install pgvector on the database server (Debian/Ubuntu with the PGDG repository: "
    "`apt install postgresql-NN-pgvector`; from source: https://github.com/pgvector/pgvector#installation; "
    "managed services (RDS, Cloud SQL, Azure, Supabase, Neon) ship it: enable it in the service's settings), "
    "then run `CREATE EXTENSION vector;` as a superuser in the Vetted database."
)

_checked: set[tuple[str, str, str]] = set()
_checked_lock = threading.Lock()


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def server_problems(cursor) -> list[str]:
    """What this server lacks for Vetted, one sentence each (empty: nothing)."""
    problems = []
    cursor.execute("SHOW server_version_num")
    number = int(cursor.fetchone()[0])
    found = (number // 10000, number % 10000)
    if found < MIN_SERVER:
        problems.append(
            f"PostgreSQL {found[0]}.{found[1]} is too old: Vetted needs {MIN_SERVER[0]} or newer "
            "(with pgvector 0.5 or newer)."
        )
    cursor.execute(
        "SELECT a.name, a.default_version, e.extversion FROM pg_available_extensions a "
        "LEFT JOIN pg_extension e ON e.extname = a.name WHERE a.name IN ('vector', 'pg_trgm')"
    )
    available = {name: (default, installed) for name, default, installed in cursor.fetchall()}
    if "vector" not in available:
        problems.append(f"The extension 'vector' (pgvector) is not installed on this server. {INSTALL_VECTOR}")
    else:
        default, installed = available["vector"]
        if _version(installed or default) < MIN_VECTOR:
            have = installed or default
            fix = "ALTER EXTENSION vector UPDATE;" if installed else INSTALL_VECTOR
            problems.append(
                f"pgvector {have} is too old: Vetted needs {'.'.join(map(str, MIN_VECTOR))} or newer "
                f"(HNSW indexes). Upgrade the server's pgvector package, then run `{fix}`."
            )
    if "pg_trgm" not in available:
        problems.append(
            "The extension 'pg_trgm' is not available on this server; it ships with PostgreSQL's contrib "
            "modules (Debian: part of the postgresql-NN package; elsewhere: postgresql-contrib)."
        )
    return problems


class DatabaseWrapper(_django_pg.DatabaseWrapper):
    def get_connection_params(self):
        params = super().get_connection_params()
        # Per-session settings as libpq startup options: no extra round trip
        # per connection. Custom (dotted) settings are accepted before the
        # vector library is loaded, which then picks them up.
        params["options"] = f"{params.get('options', '')} {SESSION_OPTIONS}".strip()
        return params

    def get_new_connection(self, conn_params):
        try:
            return super().get_new_connection(conn_params)
        except _psycopg.OperationalError as exc:
            # Re-raised as the driver's own class, so Django wraps it as usual.
            raise _psycopg.OperationalError(
                f"Cannot reach PostgreSQL ({where(self.settings_dict)}, from VETTED_DATABASE_URL): "
                f"{str(exc).strip()}. Is the server running, and do the host, port, user and password "
                "in VETTED_DATABASE_URL match it?"
            ) from exc

    def check_database_version_supported(self):
        """Django's version floor, plus the extensions (once per process and database)."""
        super().check_database_version_supported()
        settings = self.settings_dict
        key = (str(settings.get("HOST")), str(settings.get("PORT")), str(settings["NAME"]))
        with _checked_lock:
            if key in _checked:
                return
        with self.connection.cursor() as cursor:
            problems = server_problems(cursor)
        if problems:
            raise ImproperlyConfigured(f"{where(self.settings_dict)}: " + " ".join(problems))
        with _checked_lock:
            _checked.add(key)
