"""Settings for the test suite: a throwaway VETTED_HOME, a real SQLite file."""

import os
import tempfile

# Must happen before the base settings read VETTED_HOME. Subprocesses started
# by tests inherit it, so they use the same data folder.
os.environ.setdefault("VETTED_HOME", tempfile.mkdtemp(prefix="vetted-test-"))
# Fast tests use the deterministic fake embedder; tests/test_retrieval_model.py
# loads the real model explicitly.
os.environ.setdefault("VETTED_EMBEDDER", "fake")

from .settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Static files (inbox-a11y): the test client and the browser tests' live
# server (which serves through Django's finders) use plain names, so no test
# needs a collectstatic first. The hashed, compressed files WhiteNoise serves
# are tested through the daemon (tests/test_static_files.py), which collects
# them itself (memory_site/static_files.py).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
