"""The vault inside `serve`: VETTED_VAULT turns it on, and a decision made
elsewhere reaches the folder within seconds while the daemon runs."""

from __future__ import annotations

import time

import pytest

from portability.markdown_io import file_name
from reviews import actions

from .gateway_support import running_daemon


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_daemon_keeps_the_vault_in_step_with_decisions(make_record, reviewer, tmp_path):
    """Slow: starts `manage.py serve` with VETTED_VAULT set and waits on the folder."""
    record = make_record(title="Deploy window for billing")
    root = tmp_path / "vault"
    note = root / record.space / file_name(record)
    with running_daemon(tmp_path, VETTED_VAULT=str(root), VETTED_VAULT_PERSON="rita") as daemon:
        wait_for(note.exists, daemon)
        started = time.monotonic()
        actions.retire_record(record, actor=reviewer, note="No longer true.")
        wait_for(lambda: not note.exists(), daemon)
        assert time.monotonic() - started < 10
        assert "keeping" in daemon.log()


def wait_for(condition, daemon, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the vault did not catch up in time:\n" + daemon.log()[-2000:])
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_daemon_keeps_a_remembered_publication_in_step(make_record, reviewer, tmp_path, settings):
    """Slow: starts `manage.py serve` after `publish --remember` and waits on the file."""
    import io

    from django.core.management import call_command

    settings.VETTED_HOME = tmp_path / "home"
    settings.VETTED_HOME.mkdir()
    record = make_record(title="Deploy window for billing", kind="procedure")
    target = tmp_path / "AGENTS.md"
    target.write_text("# Mine\n")
    call_command("publish", str(target), person="rita", space=["team"], remember=True, stdout=io.StringIO())
    assert record.public_id in target.read_text()
    with running_daemon(tmp_path, VETTED_HOME=str(settings.VETTED_HOME)) as daemon:
        wait_for(lambda: "remembered publications" in daemon.log(), daemon)
        actions.retire_record(record, actor=reviewer, note="No longer true.")
        wait_for(lambda: record.public_id not in target.read_text(), daemon)
        assert target.read_text().startswith("# Mine\n")
    out = io.StringIO()
    call_command("publish", str(target), forget=True, stdout=out)
    assert "1 remembered publication(s) dropped" in out.getvalue()
