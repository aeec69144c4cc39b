"""When the collected static files are current, and what a server that
cannot rewrite them says (common/static_files.py). The files WhiteNoise
serves (hashed names, compression, cache headers) are tested through the
daemon in tests/test_serve.py."""

from __future__ import annotations

import os
import time

import pytest
from django.test import override_settings

from common import static_files


@pytest.fixture
def sources(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "site.css").write_text("body { margin: 0 }")
    with override_settings(STATICFILES_DIRS=[folder], STATIC_ROOT=tmp_path / "collected"):
        yield folder


def test_a_missing_collection_is_not_current(sources):
    assert not static_files.is_current()


def test_a_manifest_newer_than_every_source_is_current_and_a_changed_source_makes_it_stale(sources, settings):
    root = settings.STATIC_ROOT
    root.mkdir()
    (root / "staticfiles.json").write_text("{}")
    assert static_files.is_current()
    later = time.time() + 5
    os.utime(sources / "site.css", (later, later))
    assert not static_files.is_current()


def test_a_stale_collection_that_cannot_be_written_says_what_to_run(sources, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with override_settings(STATIC_ROOT=blocker / "static"):
        with pytest.raises(static_files.StaticFilesStale) as caught:
            static_files.ensure_collected()
    assert "make static" in str(caught.value) and str(blocker / "static") in str(caught.value)
