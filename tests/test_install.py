"""What `make run` installs: the package metadata setuptools reads and the
Makefile's split between serving and the test tools."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def test_license_is_an_spdx_string_so_setuptools_prints_no_deprecation_banner():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    # The table form ({ text = "MIT" }) makes setuptools >= 77 print a
    # deprecation banner, twice per install (metadata, then the wheel).
    assert pyproject["project"]["license"] == "MIT"
    requires = " ".join(pyproject["build-system"]["requires"])
    assert int(re.search(r"setuptools>=(\d+)", requires).group(1)) >= 77  # first to read the string form


def test_make_run_installs_without_the_test_extra():
    makefile = (PROJECT / "Makefile").read_text()
    stamp_rule = makefile.split("$(STAMP): pyproject.toml", 1)[1].split("\n\n", 1)[0]
    assert "pip install --quiet -e .\n" in stamp_rule + "\n" and "[test]" not in stamp_rule
    assert re.search(r"^run: install$", makefile, re.M)  # migrating is `vetted serve`'s own first step
    for target in ("test", "test-fast", "check"):
        assert re.search(rf"^{target}: install-dev$", makefile, re.M), target
