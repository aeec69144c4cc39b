"""Notifications through the real daemon (`manage.py serve`, its sender
thread): SIGKILL between the commit and the send loses nothing and sends
once; the feed's secret never reaches the daemon's log, access log included."""

from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request

import pytest

from reviews import actions
from tests.conftest import content
from tests.gateway_support import free_port, running_daemon
from tests.notify_support import Receiver

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def wait_until(check, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def kill(daemon) -> None:
    os.kill(daemon.process.pid, signal.SIGKILL)
    daemon.process.wait(timeout=10)


def env(receiver: Receiver, **more: str) -> dict[str, str]:
    return {
        "VETTED_WEBHOOK_URL": receiver.url,
        "VETTED_NOTIFY_MIN_SECONDS": "0",
        "VETTED_NOTIFY_QUIET_SECONDS": "0",
        **more,
    }


def propose(agent, n: int):
    return actions.propose_create(
        agent=agent,
        reason="Seen in the repository",
        **content(title=f"Daemon proposal {n}", body=f"Proposal {n}: the nightly job for service {n} runs at two."),
    )


def test_sigkill_after_the_commit_before_the_batch_sends_once_after_restart(tmp_path, agent):
    receiver = Receiver().start()
    port = free_port()
    try:
        # A long quiet window: the daemon holds the event back, then dies.
        with running_daemon(tmp_path, port=port, **env(receiver, VETTED_NOTIFY_QUIET_SECONDS="30")) as daemon:
            proposal = propose(agent, 1)
            time.sleep(1.5)  # the sender has seen it and is waiting
            kill(daemon)
        assert receiver.got == []
        with running_daemon(tmp_path, port=port, **env(receiver)) as daemon:
            assert wait_until(lambda: len(receiver.got) >= 1), daemon.log()[-2000:]
            time.sleep(2)  # and nothing more comes
        assert len(receiver.got) == 1
        assert [i["id"] for i in receiver.got[0].json()["items"]] == [proposal.public_id]
    finally:
        receiver.stop()


def test_sigkill_during_the_send_resends_under_the_same_delivery_id(tmp_path, agent):
    receiver = Receiver(delay=60).start()  # takes the request, never answers in time
    port = free_port()
    try:
        with running_daemon(tmp_path, port=port, **env(receiver)) as daemon:
            proposal = propose(agent, 2)
            assert wait_until(lambda: len(receiver.got) >= 1), daemon.log()[-2000:]
            kill(daemon)  # the message left, its "sent" was never recorded
        receiver.delay = 0
        with running_daemon(tmp_path, port=port, **env(receiver)) as daemon:
            assert wait_until(lambda: len(receiver.got) >= 2), daemon.log()[-2000:]
            time.sleep(2)
        ids = [r.headers["x-vetted-delivery"] for r in receiver.got]
        assert len(ids) == 2 and ids[0] == ids[1]  # the same message again ...
        assert list(receiver.unique()) == [ids[0]]  # ... which a receiver drops: delivered once
        assert [i["id"] for i in receiver.got[1].json()["items"]] == [proposal.public_id]
    finally:
        receiver.stop()


def test_the_feed_secret_never_reaches_the_daemon_log(tmp_path, reviewer):
    key = actions.rotate_feed_key(actor=reviewer)
    with running_daemon(tmp_path) as daemon:
        with urllib.request.urlopen(f"{daemon.base}/feed/atom?key={key.secret}", timeout=10) as response:
            assert response.status == 200
        try:
            urllib.request.urlopen(f"{daemon.base}/feed/atom?key={key.secret}x", timeout=10)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
        time.sleep(0.5)
        log = daemon.log()
    assert "GET /feed/atom?key=[redacted]" in log
    assert key.secret not in log


def test_bench_notify_prints_its_table_on_a_scratch_database(tmp_path):
    import subprocess
    import sys

    from tests.gateway_support import PROJECT

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "VETTED_HOME": str(tmp_path),
        "VETTED_EMBEDDER": "fake",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "bench_notify", "--proposals", "5", "--polls", "10"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "commit -> webhook arrival" in done.stdout and "VETTED_NOTIFY_QUIET_SECONDS=0" in done.stdout
    assert "nothing new (cache warm)" in done.stdout
    assert not (tmp_path / "vetted.sqlite3").exists()  # the real database was never made or touched


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("VETTED_WEBHOOK_FORMAT", "xml", "use one of: json, ntfy, slack"),
        ("VETTED_NOTIFY_SPACES", "team,Public!", "'Public!' is not a space slug or kind"),
        ("VETTED_WEBHOOK_URL", "ftp://x", "must start with http"),
        ("VETTED_EMAIL_SECURITY", "tls", "use one of: starttls, ssl, none"),
        ("VETTED_NOTIFY_MIN_SECONDS", "-1", "below the minimum"),
        ("VETTED_NOTIFY_EMAIL", "rita", "not an email address"),
    ],
)
def test_a_bad_notification_setting_stops_the_process_naming_it(tmp_path, name, value, says):
    import subprocess
    import sys

    from tests.gateway_support import PROJECT

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_HOME": str(tmp_path), name: value}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert name in done.stderr and says in done.stderr
