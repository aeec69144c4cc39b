"""The test suite's own promises: `make test-fast` (-m "not slow and not
browser") starts no process, and Hypothesis profiles scale property tests."""

from __future__ import annotations

import subprocess
import sys

import hypothesis
import pytest


def test_an_unmarked_test_that_starts_a_process_fails_saying_so():
    with pytest.raises(pytest.fail.Exception, match=r"starts a process .* mark it @pytest.mark.slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.slow
def test_a_slow_test_may_start_a_process():
    assert subprocess.run([sys.executable, "-c", "print('ok')"], capture_output=True, text=True).stdout == "ok\n"


def test_the_fast_profile_runs_fewer_examples():
    fast = hypothesis.settings.get_profile("fast")
    assert fast.max_examples < 25 and fast.stateful_step_count < 40
