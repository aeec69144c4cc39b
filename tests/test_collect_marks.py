"""Leaving out test modules unimported (tests/collect_marks.py) selects
exactly the tests a full import would: never fewer, never more."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.collect_marks import expression_false_for_every_test, leaves_out, may_carry, sure_marks

FAST = "not slow and not browser and not model"


def module(tmp_path: Path, source: str, name: str = "test_sample.py") -> Path:
    path = tmp_path / name
    path.write_text(source)
    return path


def test_a_module_marked_slow_is_left_out_of_the_fast_subset(tmp_path):
    path = module(tmp_path, "import pytest\npytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]\n")
    assert sure_marks(path) == {"slow", "django_db"}
    assert leaves_out(path, expression=FAST)
    assert not leaves_out(path, expression="slow")
    assert not leaves_out(path, expression="")


def test_a_module_with_marks_only_on_some_tests_is_imported(tmp_path):
    path = module(
        tmp_path, "import pytest\n\n@pytest.mark.slow\ndef test_one():\n    pass\n\ndef test_two():\n    pass\n"
    )
    assert sure_marks(path) == frozenset()
    assert not leaves_out(path, expression=FAST)


def test_marks_both_branches_of_an_if_assign_are_the_only_sure_ones(tmp_path):
    source = (
        "import pytest\nif X:\n    pytestmark = [pytest.mark.browser, pytest.mark.skip]\n"
        "else:\n    pytestmark = [pytest.mark.browser]\n"
    )
    assert sure_marks(module(tmp_path, source)) == {"browser"}
    one_branch = "import pytest\nif X:\n    pytestmark = pytest.mark.slow\n"
    assert sure_marks(module(tmp_path, one_branch, "test_other.py")) == frozenset()


def test_a_later_assignment_or_star_import_replaces_what_was_sure(tmp_path):
    assert sure_marks(module(tmp_path, "import pytest\npytestmark = pytest.mark.slow\npytestmark = []\n")) == set()
    star = "import pytest\npytestmark = pytest.mark.slow\nfrom somewhere import *\n"
    assert sure_marks(module(tmp_path, star, "test_star.py")) == frozenset()
    names = "import pytest\nmarks = [pytest.mark.slow]\npytestmark = [*marks, pytest.mark.model]\n"
    assert sure_marks(module(tmp_path, names, "test_names.py")) == {"slow", "model"}


def test_marks_imported_from_another_test_module_count():
    # tests/test_decide_browser.py: `pytestmark = base.pytestmark`, base being test_inbox_browser
    # (whose pytestmark is set in both branches of an if).
    assert "browser" in sure_marks(Path(__file__).parent / "test_decide_browser.py")
    assert "browser" in sure_marks(Path(__file__).parent / "test_accessibility_browser.py")


def test_every_combination_of_other_marks_is_tried(tmp_path):
    path = module(tmp_path, "import pytest\npytestmark = pytest.mark.slow\n")
    # `a` is False at first, so `b` is not asked about until a combination sets `a`.
    assert not expression_false_for_every_test("(a and b) or not slow", path)
    assert not expression_false_for_every_test("(a and b) or never", path)
    assert expression_false_for_every_test("not slow and (a or b)", path)
    # A mark with arguments depends on what a test passes: imported.
    assert not expression_false_for_every_test("not slow or skipif(reason=1)", path)


def test_only_serial_keeps_a_module_that_may_carry_the_mark(tmp_path):
    plain = module(tmp_path, "def test_serializes():\n    assert 'serial number'\n")
    assert not may_carry(plain, "serial") and leaves_out(plain, expression="", only_mark="serial")
    marked = module(tmp_path, "import pytest\n\n@pytest.mark.serial\ndef test_x():\n    pass\n", "test_m.py")
    assert may_carry(marked, "serial") and not leaves_out(marked, expression="", only_mark="serial")


def collected(*args: str, collect_all: bool) -> list[str]:
    env = {**os.environ, "VETTED_COLLECT_ALL": "1" if collect_all else "0"}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).parent.parent,
        timeout=600,
    )
    assert run.returncode in (0, 5), run.stdout[-2000:] + run.stderr[-2000:]
    return sorted(line for line in run.stdout.splitlines() if "::" in line)


@pytest.mark.slow
@pytest.mark.parametrize("args", [("-m", FAST), ("--serial=only",)], ids=["fast", "serial-only"])
def test_the_same_tests_are_selected_as_when_every_module_is_imported(args):
    """Slow: two whole collections in processes of their own (about 20 CPU s each)."""
    left_out = collected(*args, collect_all=False)
    assert left_out, "the run selected nothing"
    assert left_out == collected(*args, collect_all=True)
