"""`publish --watch`'s loop: a decision changes the published block within
seconds, and a second follower of the same files is refused."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from portability import publish
from portability.publish.follow import follow, lock_path
from portability.vault import VaultBusy
from portability.vault.watch import hold_lock
from reviews import actions


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_decision_changes_the_published_block_while_the_follower_runs(make_record, reviewer, tmp_path):
    """Slow: runs the follower (watchfiles' OS event thread) for a few seconds
    against real files and waits for its syncs."""
    record = make_record(title="Deploy window for billing", kind="procedure")
    target = tmp_path / "CLAUDE.md"
    target.write_text("# Mine\n")
    selection = publish.Selection(person="rita", spaces=("team",))
    stop = threading.Event()

    def run():
        try:
            follow([target], selection, stop=stop, tick_ms=200)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for(lambda: record.public_id in target.read_text())
        with pytest.raises(VaultBusy):
            with hold_lock(lock_path([target]), "busy"):
                pass
        started = time.monotonic()
        actions.retire_record(record, actor=reviewer, note="No longer true.")
        wait_for(lambda: record.public_id not in target.read_text())
        assert time.monotonic() - started < 10
        assert target.read_text().startswith("# Mine\n")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


def wait_for(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the block did not catch up in time")
        time.sleep(0.1)
