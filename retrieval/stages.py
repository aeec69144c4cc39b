"""An optional stopwatch over the stages of one search, for the per-stage
benchmark (``bench_stages``).

Off by default, and then nearly free: each instrumented function reads the
context variable once and skips every mark when it is None. Inside
``timing()`` each ``clock.lap(name)`` adds the nanoseconds since the previous
mark to ``name`` (a stage entered several times, e.g. once per space,
accumulates), so the stages of a search sum to its wall time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class Clock:
    def __init__(self) -> None:
        self.laps: dict[str, int] = {}
        self._last = time.perf_counter_ns()

    def lap(self, stage: str) -> None:
        now = time.perf_counter_ns()
        self.laps[stage] = self.laps.get(stage, 0) + now - self._last
        self._last = now


_clock: ContextVar[Clock | None] = ContextVar("search_stage_clock", default=None)


def clock() -> Clock | None:
    """The running stopwatch, or None when nobody is timing (the usual case)."""
    return _clock.get()


@contextmanager
def timing() -> Iterator[Clock]:
    """Time the stages of whatever search runs inside; the clock's laps are in nanoseconds."""
    watch = Clock()
    token = _clock.set(watch)
    try:
        yield watch
    finally:
        _clock.reset(token)
