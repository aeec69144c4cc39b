"""A migrated database, made once and copied, for tests that run Vetted in
processes of its own (`manage.py serve`, the stdio bridge, commands).

`manage.py migrate` in a subprocess takes 5-10 s; a copy of a file migrated
once per test session (once per worker under pytest-xdist) takes
milliseconds and is the same database: the migrations write no random data.
The template is made by the real command under the production settings, so
what the tests start from is what a fresh install has.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PROJECT = Path(__file__).resolve().parent.parent
DATABASE_FILE = "vetted.sqlite3"  # the name settings.DB_PATH gives it in a VETTED_HOME


def production_env(home: Path, **overrides: str) -> dict[str, str]:
    """The environment of a Vetted process over ``home`` (the production
    settings and the fake embedder; the test run's own database path left out)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "VETTED_HOME": str(home),
        "VETTED_EMBEDDER": "fake",
    }
    env.pop("VETTED_DB_PATH", None)
    env.update(overrides)
    return env


@dataclass
class Template:
    """A migrated SQLite file, or on the PostgreSQL pass a migrated database
    on the test server (copied with CREATE DATABASE ... TEMPLATE)."""

    sqlite_file: Path | None = None
    postgres_url: str | None = None

    def home(self, home: Path) -> dict[str, str]:
        """``home`` made a VETTED_HOME with a copy of the migrated database;
        returns the environment of a process over it."""
        home.mkdir(parents=True, exist_ok=True)
        if self.postgres_url is None:
            assert self.sqlite_file is not None
            shutil.copyfile(self.sqlite_file, home / DATABASE_FILE)
            return production_env(home)
        name = f"vetted_copy_{secrets.token_hex(4)}"
        _create_database(self.postgres_url, f'CREATE DATABASE "{name}" TEMPLATE "{_name(self.postgres_url)}"')
        return production_env(home, VETTED_DATABASE_URL=_with_name(self.postgres_url, name))


def make_template(folder: Path, *, postgres_server_url: str | None = None) -> Template:
    """Run `manage.py migrate` once into ``folder`` (SQLite), or into a new
    database on ``postgres_server_url``'s server."""
    env = production_env(folder)
    template = Template(sqlite_file=folder / DATABASE_FILE)
    if postgres_server_url is not None:
        url = _with_name(postgres_server_url, f"vetted_template_{secrets.token_hex(4)}")
        _create_database(postgres_server_url, f'CREATE DATABASE "{_name(url)}"')
        env["VETTED_DATABASE_URL"] = url
        template = Template(postgres_url=url)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=PROJECT,
        env=env,
        check=True,
        timeout=300,
        capture_output=True,
    )
    if template.sqlite_file is not None:
        # Everything into the main file, so a copy of that file alone is whole.
        with sqlite3.connect(template.sqlite_file) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    return template


def _name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def _with_name(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


def _create_database(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(_with_name(url, "postgres"), autocommit=True) as conn:
        conn.execute(sql)
