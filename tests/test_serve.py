"""`manage.py serve`: the real daemon in its own process, on a free port."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from mcp_bridge.daemon_process import free_port

PROJECT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def fetch(url, headers=None):
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=5) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def _serve(env: dict[str, str], **output) -> tuple[str, subprocess.Popen]:
    """`manage.py serve` on a free port, once it answers /health."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)], cwd=PROJECT, env=env, text=True, **output
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if fetch(base + "/health")[0] == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail(f"serve did not answer /health: {(process.communicate()[1] or '')[-2000:]}")
    return base, process


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def daemon(migrated, tmp_path_factory):
    """One daemon over a fresh install (a migrated database, no account),
    shared by the tests that only read from it."""
    home = tmp_path_factory.mktemp("serve")
    with open(home / "serve.log", "w") as log:
        base, process = _serve(migrated.home(home), stdout=log, stderr=subprocess.STDOUT)
    yield base, process
    _stop(process)


@pytest.fixture
def own_daemon(migrated, tmp_path):
    """A daemon of the test's own over a fresh install in ``tmp_path``, its
    output on pipes, for the tests that stop it or read what it printed."""
    base, process = _serve(migrated.home(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    yield base, process
    _stop(process)


def test_health_answers_without_auth_only_that_vetted_is_up(daemon):
    base, _ = daemon
    status, headers, body = fetch(base + "/health")
    data = json.loads(body)
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert data == {"status": "ok", "service": "vetted", "version": data["version"]} and data["version"]


def sign_in(base, username, password):
    """A session cookie for ``username`` from the daemon's own sign-in form."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base + "/accounts/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token})
    opener.open(urllib.request.Request(base + "/accounts/login/", data=form.encode(), headers={"Referer": base}))
    return opener


def test_health_gives_the_operator_counts_and_the_model_warmed_at_startup(own_daemon, tmp_path):
    base, _ = own_daemon
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_HOME": str(tmp_path)}
    make_operator = (
        "from django.contrib.auth.models import User; User.objects.create_superuser('op', '', 'a-long-password-9')"
    )
    subprocess.run([sys.executable, "manage.py", "shell", "-c", make_operator], cwd=PROJECT, env=env, check=True)
    with sign_in(base, "op", "a-long-password-9").open(base + "/health", timeout=5) as response:
        data = json.loads(response.read())
    assert data["model"]["loaded"] is True  # warmed at startup, not on first search
    assert data["records"] == {"approved": 0, "overdue": 0, "disputed": 0, "total": 0}
    assert data["pending_proposals"] == 0


def test_site_and_static_files_are_served(daemon):
    base, _ = daemon
    status, headers, _ = fetch(base + "/")
    assert status == 302 and headers["location"].endswith("/setup/")  # no account yet
    status, _, body = fetch(base + "/setup/")
    assert status == 200 and b"Create the reviewer account" in body
    status, headers, _ = fetch(base + "/static/vetted/site.css")
    assert status == 200 and headers["content-type"].startswith("text/css")
    assert fetch(base + "/static/admin/css/base.css")[0] == 200


def test_pages_link_hashed_static_files_served_compressed_with_a_year_of_cache(daemon):
    base, _ = daemon
    status, _, body = fetch(base + "/setup/")  # no account yet: the first-run page
    assert status == 200
    links = re.findall(r'(?:href|src)="(/static/vetted/[^"]+)"', body.decode())
    names = {Path(link).name for link in links}
    # site.css, htmx.min.js, keys.js, hints.js, the web manifest and the icon, each under a content hash.
    assert len(names) == 6 and all(re.search(r"\.[0-9a-f]{12}\.", name) for name in names), names
    for link in links:
        plain_status, _, plain = fetch(base + link)
        assert plain_status == 200
        for encoding in ("br", "gzip"):
            status, headers, packed = fetch(base + link, {"Accept-Encoding": encoding})
            assert status == 200
            # WhiteNoise's "forever" is ten years; a year is what was asked for.
            max_age = int(re.search(r"max-age=(\d+)", headers["cache-control"]).group(1))
            assert max_age >= 31536000 and "immutable" in headers["cache-control"]
            if link.endswith((".css", ".js")):
                assert headers["content-encoding"] == encoding, link
                assert len(packed) < len(plain) / 2
    # A name that is not hashed (the icon named inside the web manifest) is
    # served too, but cached only briefly: it can change under the same name.
    status, headers, _ = fetch(base + "/static/vetted/icon.svg")
    assert status == 200 and "immutable" not in headers["cache-control"]


def test_a_foreign_host_header_is_refused(daemon):
    base, _ = daemon
    request = urllib.request.Request(base + "/health", headers={"Host": "evil.example"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    assert status == 400


def test_sigterm_stops_it_cleanly(own_daemon):
    _, process = own_daemon
    process.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught, so
    # the exit status still says "terminated by SIGTERM".
    assert process.wait(timeout=20) in (0, -signal.SIGTERM)
    log = process.stderr.read()
    assert "Shutting down" in log and "Finished server process" in log
    assert "Traceback" not in log


def test_first_run_setup_code_is_private_and_never_in_its_log(own_daemon, tmp_path):
    base, process = own_daemon
    code_file = tmp_path / "setup-code"
    assert code_file.stat().st_mode & 0o777 == 0o600
    code = code_file.read_text().strip()
    assert len(code) >= 24
    status, _, body = fetch(f"{base}/setup/?code={code}")
    assert status == 200 and f'value="{code}"'.encode() in body
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=20)
    log = process.stderr.read() + process.stdout.read()
    assert f"with the setup code in {code_file}" in log  # a pipe is not a terminal: where, not what
    assert "GET /setup/?code=[redacted]" in log
    assert code not in log


def test_serve_records_where_it_listens_refuses_a_second_one_and_removes_the_record_on_stop(own_daemon, tmp_path):
    base, process = own_daemon
    record = json.loads((tmp_path / "serve.json").read_text())
    assert record["pid"] == process.pid and record["state"] == "listening"
    assert record["url"] == base and record["port"] == int(base.rsplit(":", 1)[1])
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_HOME": str(tmp_path)}
    second = subprocess.run(
        [sys.executable, "manage.py", "serve", "--port", str(record["port"])],
        cwd=PROJECT,
        env={**env, "VETTED_EMBEDDER": "fake"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1
    assert f"Vetted is already running for {tmp_path}: {base}/ (pid {process.pid}" in second.stderr
    assert f"kill {process.pid}" in second.stderr
    # Refused before the model loads and before anything says it serves.
    assert "Vetted on" not in second.stderr and "Errno 98" not in second.stderr and "Traceback" not in second.stderr
    assert json.loads((tmp_path / "serve.json").read_text())["pid"] == process.pid  # left alone
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=20)
    assert not (tmp_path / "serve.json").exists()


# --------------------------------------------------------------------------- slow and excess connections


def open_sockets(base, count, payload=b""):
    host, port = base.removeprefix("http://").split(":")
    sockets = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=30)
        if payload:
            sock.sendall(payload)
        sockets.append(sock)
    return sockets


def seconds_until_closed(sock, started, give_up=15.0) -> float:
    """When the server closed ``sock`` (it reads end of file), counted from
    ``started``; ``give_up`` seconds after ``started`` if it is still open."""
    try:
        while True:
            left = started + give_up - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            if not sock.recv(1024):
                break
    except OSError:
        pass
    return time.monotonic() - started


PARTIAL = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "  # never finished


def start_daemon(migrated, tmp_path, **extra_env) -> tuple[str, subprocess.Popen]:
    """A daemon of the test's own over a fresh install, with ``extra_env``."""
    env = {**migrated.home(tmp_path), **extra_env}
    with open(tmp_path / "serve.log", "w") as log:  # a file: a pipe nobody reads could fill and stall it
        return _serve(env, stdout=log, stderr=subprocess.STDOUT)


def test_connections_that_never_finish_their_headers_are_closed_after_the_header_time(migrated, tmp_path):
    """A real daemon and real sockets: 100 connections that send half a
    request are all closed within VETTED_HEADER_SECONDS (2 s here), and the
    daemon keeps answering meanwhile (slow: a process and sockets)."""
    base, process = start_daemon(migrated, tmp_path, VETTED_HEADER_SECONDS="2", VETTED_MAX_CONNECTIONS="500")
    try:
        started = time.monotonic()
        slow = open_sockets(base, 100, PARTIAL)
        assert fetch(base + "/health")[0] == 200
        closed_after = [seconds_until_closed(sock, started) for sock in slow]
        assert min(closed_after) >= 1.5 and max(closed_after) < 6, (min(closed_after), max(closed_after))
        for sock in slow:
            sock.close()
    finally:
        _stop(process)


def test_a_kept_alive_connection_that_stalls_in_its_next_request_is_closed(migrated, tmp_path):
    base, process = start_daemon(migrated, tmp_path, VETTED_HEADER_SECONDS="2")
    try:
        (sock,) = open_sockets(base, 1, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(10)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        sock.sendall(PARTIAL)
        # The keep-alive wait (5 s) plus the header time (2 s) at most.
        assert seconds_until_closed(sock, started) < 9
        sock.close()
    finally:
        _stop(process)


def test_connections_beyond_the_cap_are_closed_at_once_and_room_comes_back(migrated, tmp_path):
    base, process = start_daemon(migrated, tmp_path, VETTED_HEADER_SECONDS="3", VETTED_MAX_CONNECTIONS="8")
    try:
        held = open_sockets(base, 8)
        time.sleep(0.3)
        started = time.monotonic()
        (extra,) = open_sockets(base, 1, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        extra.settimeout(5)
        try:
            answer = extra.recv(65536)
        except OSError:
            answer = b""
        assert answer == b"" and time.monotonic() - started < 2  # closed, not left waiting
        extra.close()
        for sock in held:
            seconds_until_closed(sock, started)  # the header time frees them
            sock.close()
        assert fetch(base + "/health")[0] == 200
    finally:
        _stop(process)
