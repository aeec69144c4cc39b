"""VETTED_HOME/serve.json: where `serve` listens, read by `serve` itself
(refusing a second daemon before the model loads), `connect` and the bridge."""

from __future__ import annotations

import io
import json
import os
import socket

import pytest
from django.core.management.base import CommandError

from common import listening
from mcp_bridge.management.commands.serve import Command as Serve
from mcp_bridge.stdio.config import load_config

DEAD_PID = 2**31 - 2  # above any pid_max: never a live process


def test_a_record_names_host_port_pid_and_a_loopback_url(tmp_path):
    path = listening.write(tmp_path, host="0.0.0.0", port=9123, state="listening")
    record = listening.read(tmp_path)
    assert path == tmp_path / "serve.json" and record.path == path
    assert (record.host, record.port, record.pid, record.state) == ("0.0.0.0", 9123, os.getpid(), "listening")
    assert record.url == "http://127.0.0.1:9123" and record.alive
    assert json.loads(path.read_text())["url"] == "http://127.0.0.1:9123"
    assert listening.local_url("::", 80) == "http://[::1]:80"


def test_a_record_from_a_dead_pid_is_stale_and_not_running(tmp_path):
    (tmp_path / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": 9001, "pid": DEAD_PID}))
    assert listening.read(tmp_path).alive is False
    assert listening.running(tmp_path) is None
    (tmp_path / "serve.json").write_text("not json")
    assert listening.read(tmp_path) is None


def test_remove_leaves_another_process_s_record(tmp_path):
    (tmp_path / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": 9001, "pid": 1}))
    listening.remove(tmp_path)
    assert (tmp_path / "serve.json").exists()
    listening.write(tmp_path, host="127.0.0.1", port=9001, state="starting")
    listening.remove(tmp_path)
    assert not (tmp_path / "serve.json").exists()


def refuse(settings, tmp_path, port: int):
    settings.VETTED_HOME = tmp_path
    notes = io.StringIO()
    command = Serve(stdout=io.StringIO(), stderr=notes)
    result = command._refuse_if_running("127.0.0.1", port)
    return result, notes.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_refuses_when_this_home_s_daemon_runs_on_that_port_saying_where_and_how_to_stop(settings, tmp_path):
    port = free_port()
    (tmp_path / "serve.json").write_text(
        json.dumps({"host": "127.0.0.1", "port": port, "pid": os.getppid(), "state": "listening", "started": 0})
    )
    with pytest.raises(CommandError) as caught:
        refuse(settings, tmp_path, port)
    message = str(caught.value)
    assert f"Vetted is already running for {tmp_path}: http://127.0.0.1:{port}/ (pid {os.getppid()}" in message
    assert f"kill {os.getppid()}" in message


def test_serve_ignores_and_removes_a_stale_record(settings, tmp_path):
    port = free_port()
    (tmp_path / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": port, "pid": DEAD_PID}))
    result, notes = refuse(settings, tmp_path, port)
    assert result is None and f"pid {DEAD_PID}" in notes and "gone" in notes
    assert not (tmp_path / "serve.json").exists()


def test_serve_refuses_a_port_another_program_holds(settings, tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(CommandError, match=f"Port {port} on 127.0.0.1 is in use by another program"):
            refuse(settings, tmp_path, port)


def test_a_second_daemon_of_the_same_home_on_another_port_leaves_the_record_alone(settings, tmp_path):
    (tmp_path / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": 1, "pid": os.getppid()}))
    result, notes = refuse(settings, tmp_path, free_port())
    assert result is not None and result.pid == os.getppid() and "keeps naming that one" in notes


@pytest.mark.django_db
def test_connect_takes_the_url_from_the_running_daemon_s_record(settings, tmp_path, reviewer):
    from tests.test_connect import block, connect

    settings.VETTED_HOME = tmp_path
    (tmp_path / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": 9111, "pid": os.getppid()}))
    out, err = connect("cursor", "--agent", "cursor-recorded")
    assert block(out, "json")["mcpServers"]["vetted"]["env"]["VETTED_URL"] == "http://127.0.0.1:9111"
    assert "Vetted serves this VETTED_HOME at http://127.0.0.1:9111" in err
    (tmp_path / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": 9111, "pid": DEAD_PID}))
    out, _ = connect("cursor", "--agent", "cursor-stale")
    assert "VETTED_URL" not in block(out, "json")["mcpServers"]["vetted"]["env"]  # the default again


def test_the_bridge_takes_the_url_from_the_record_when_none_is_configured(tmp_path):
    (tmp_path / "serve.json").write_text(json.dumps({"host": "127.0.0.1", "port": 9222, "pid": os.getppid()}))
    env = {"VETTED_HOME": str(tmp_path), "VETTED_TOKEN": "vt_x", "VETTED_CONFIG": ""}
    assert load_config(env).url == "http://127.0.0.1:9222"
    assert load_config({**env, "VETTED_URL": "http://127.0.0.1:9333"}).url == "http://127.0.0.1:9333"
