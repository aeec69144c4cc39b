"""The stdio bridge, spawned the way Claude Desktop/Code spawn it, relaying
to the real daemon; and what it does when the daemon is not there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
from mcp import StdioServerParameters

from reviews import actions
from reviews.models import Proposal
from tests.gateway_support import PROJECT, free_port, running_daemon
from tests.mcp_client import over_stdio, text_of
from tests.test_mcp_http import NEW_FACT, SAFE_TOOLS

pytestmark = pytest.mark.slow

BRIDGE = [sys.executable, str(PROJECT / "manage.py"), "mcp_stdio"]


def bridge_params(url: str, token: str, **env) -> StdioServerParameters:
    # The client passes only HOME/PATH/... through; everything else is explicit,
    # exactly as a client config file would give it.
    return StdioServerParameters(
        command=BRIDGE[0],
        args=BRIDGE[1:],
        env={"VETTED_URL": url, "VETTED_TOKEN": token, "VETTED_AUTOSTART": "0", **env},
    )


def test_bridge_relays_tools_and_calls_to_the_daemon(gateway, agent_tokens, reviewer):
    params = bridge_params(gateway.base, agent_tokens["claude-code"])

    async def propose(client):
        names = {t.name for t in (await client.list_tools()).tools}
        answer = await client.call_tool("propose_context", NEW_FACT)
        return names, answer

    names, answer = over_stdio(params, propose)
    assert names == SAFE_TOOLS
    proposal_id = answer.structured_content["proposal_id"]
    proposal = Proposal.objects.get(public_id=proposal_id)
    assert proposal.agent.name == "claude-code"  # identity from the token the bridge carries

    async def search(client):
        return await client.call_tool("search", {"query": "payments deploy Tuesday"})

    assert over_stdio(params, search).structured_content["results"] == []
    actions.accept_proposal(proposal, actor=reviewer)
    hits = over_stdio(params, search, mode="legacy").structured_content["results"]
    assert [h["title"] for h in hits] == [NEW_FACT["title"]]


def test_bridge_passes_tool_errors_through(gateway, agent_tokens):
    async def bad(client):
        return await client.call_tool("read", {"id": "rec_000000000000"})

    result = over_stdio(bridge_params(gateway.base, agent_tokens["team-bot"]), bad)
    assert result.is_error and "[not_found]" in text_of(result)


def raw_session(env: dict, messages: list[dict], *, timeout: float = 30) -> tuple[list[str], str, int]:
    """Spawn the bridge, write messages one per line, close stdin; return
    stdout lines, stderr and the exit code."""
    full_env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env}
    process = subprocess.run(
        BRIDGE,
        input="".join(json.dumps(m) + "\n" for m in messages),
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )
    return process.stdout.splitlines(), process.stderr, process.returncode


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_stdout_carries_nothing_but_protocol_messages(gateway, agent_tokens):
    lines, stderr, code = raw_session(
        {"VETTED_URL": gateway.base, "VETTED_TOKEN": agent_tokens["claude-code"], "VETTED_AUTOSTART": "0"},
        [
            INIT,
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "describe", "arguments": {}}},
            {"jsonrpc": "2.0", "id": 4, "method": "ping"},
        ],
    )
    assert code == 0, stderr
    messages = [json.loads(line) for line in lines]  # every line is JSON
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages}
    assert set(by_id) == {1, 2, 3, 4}
    assert by_id[1]["result"]["serverInfo"]["name"] == "vetted"
    assert {t["name"] for t in by_id[2]["result"]["tools"]} == SAFE_TOOLS
    assert by_id[3]["result"]["structuredContent"]["agent"]["name"] == "claude-code"


def test_bridge_imports_neither_torch_nor_django_nor_the_sdk(gateway, agent_tokens):
    env = {
        "VETTED_URL": gateway.base,
        "VETTED_TOKEN": agent_tokens["claude-code"],
        "VETTED_AUTOSTART": "0",
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
    }
    process = subprocess.run(
        [sys.executable, "-X", "importtime", *BRIDGE[1:]],
        input=json.dumps(INIT) + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    imported = {line.split("|")[-1].strip() for line in process.stderr.splitlines() if line.startswith("import time:")}
    assert "mcp_bridge.stdio.bridge" in imported
    for heavy in ("torch", "sentence_transformers", "django", "mcp", "numpy", "pydantic"):
        assert heavy not in imported, heavy
    assert json.loads(process.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "vetted"


def test_daemon_down_without_autostart_says_how_to_start_it():
    port = free_port()
    lines, stderr, code = raw_session(
        {"VETTED_URL": f"http://127.0.0.1:{port}", "VETTED_TOKEN": "vt_" + "x" * 43, "VETTED_AUTOSTART": "0"},
        [INIT],
    )
    assert code == 0
    error = json.loads(lines[0])["error"]
    assert f"Vetted is not running at http://127.0.0.1:{port}" in error["message"]
    assert "make run" in error["message"] and "manage.py serve" in error["message"]
    assert "Start it with" in stderr


def test_missing_token_is_a_configuration_error_on_stderr():
    lines, stderr, code = raw_session({"VETTED_CONFIG": ""}, [INIT])
    assert code == 2 and lines == []
    assert "No agent token: set VETTED_TOKEN" in stderr


def test_a_config_file_can_hold_url_and_token(gateway, agent_tokens, tmp_path):
    config = tmp_path / "bridge.json"
    config.write_text(json.dumps({"url": gateway.base, "token": agent_tokens["team-bot"], "autostart": False}))
    lines, stderr, code = raw_session(
        {"VETTED_CONFIG": str(config)},
        [
            INIT,
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "describe", "arguments": {}}},
        ],
    )
    assert code == 0, stderr
    described = [json.loads(line) for line in lines][-1]["result"]["structuredContent"]
    assert described["agent"]["name"] == "team-bot"


def test_bridge_reconnects_when_the_daemon_restarts(agent_tokens, tmp_path):
    port = free_port()

    async def across_restart(client):
        import asyncio

        first = await client.call_tool("describe", {})
        await asyncio.to_thread(restart)
        second = await client.call_tool("describe", {})
        return first, second

    daemons: list = []

    def restart():
        daemons[0].__exit__(None, None, None)
        second = running_daemon(tmp_path, port=port)
        second.__enter__()
        daemons.append(second)

    first_daemon = running_daemon(tmp_path, port=port)
    first_daemon.__enter__()
    daemons.append(first_daemon)
    try:
        first, second = over_stdio(
            bridge_params(f"http://127.0.0.1:{port}", agent_tokens["claude-code"]), across_restart
        )
    finally:
        daemons[-1].__exit__(None, None, None)
    assert not first.is_error and not second.is_error  # the old session died with the daemon


def test_autostart_starts_one_daemon_for_concurrent_bridges(migrated, tmp_path):
    """Two bridges spawned at once against a stopped daemon: one starts it
    (under the lock), the other waits for it; both get answers."""
    env, token = _home_with_agent(migrated, tmp_path / "home", "auto")
    home = tmp_path / "home"
    port = free_port()
    bridge_env = {**env, "VETTED_URL": f"http://127.0.0.1:{port}", "VETTED_TOKEN": token, "VETTED_AUTOSTART": "1"}
    session = "".join(
        json.dumps(m) + "\n"
        for m in [
            INIT,
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "describe"}},
        ]
    )
    started = time.monotonic()
    bridges = [
        subprocess.Popen(
            BRIDGE, env=bridge_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        outputs = [b.communicate(session, timeout=150) for b in bridges]
    finally:
        stderr_all = "".join(err for _, err in outputs) if "outputs" in locals() else ""
        pids = {int(p) for p in re.findall(r"daemon up \(pid (\d+)\)", stderr_all)}
        for pid in pids:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
    for out, err in outputs:
        replies = [json.loads(line) for line in out.splitlines()]
        assert replies[-1]["result"]["structuredContent"]["agent"]["name"] == "auto", err
    assert stderr_all.count("starting the Vetted daemon") == 1
    assert len(pids) == 1 and (home / "daemon.log").exists()
    assert time.monotonic() - started < 150


def _home_with_agent(migrated, home, agent="cold"):
    """A fresh VETTED_HOME (a copy of the session's migrated database) with
    a reviewer and one agent; returns (env, token)."""
    env = migrated.home(home)
    manage = [sys.executable, str(PROJECT / "manage.py")]
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", "rita", "--email", "r@example.com"],
        env={**env, "DJANGO_SUPERUSER_PASSWORD": "a-long-password-1"},
        check=True,
        timeout=60,
    )
    made = subprocess.run(
        [*manage, "create_agent", agent, "--spaces", "team"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return env, made.stdout.strip().splitlines()[-1]


def _stop_recorded_daemon(home):
    from common import listening

    record = listening.running(home)
    if record is not None:
        os.kill(record.pid, 15)
        deadline = time.monotonic() + 20
        while listening.pid_alive(record.pid) and time.monotonic() < deadline:
            time.sleep(0.05)


def test_a_cold_bridge_answers_initialize_and_tools_list_before_the_daemon_is_up(migrated, tmp_path):
    """The daemon down, autostart on: initialize and tools/list come from the
    answers the daemon gave an earlier session (VETTED_HOME/bridge-cache.json),
    at once, while the daemon starts; the first tool call waits for it."""
    from mcp_bridge.stdio.config import load_config

    home = tmp_path / "home"
    env, token = _home_with_agent(migrated, home)
    port = free_port()
    bridge_env = {**env, "VETTED_URL": f"http://127.0.0.1:{port}", "VETTED_TOKEN": token, "VETTED_AUTOSTART": "1"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    describe = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "describe", "arguments": {}}}

    def session():
        bridge = subprocess.Popen(
            BRIDGE, env=bridge_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        replies, up_at_initialize = [], None
        try:
            for message in (INIT, INITIALIZED, listing, describe):
                bridge.stdin.write(json.dumps(message) + "\n")
                bridge.stdin.flush()
                if "id" in message:
                    replies.append(json.loads(bridge.stdout.readline()))
                    if message is INIT:
                        up_at_initialize = daemon_healthy(load_config(bridge_env), timeout=0.5)
        finally:
            bridge.stdin.close()
            stderr = bridge.stderr.read()
            bridge.wait(timeout=30)
        return replies, up_at_initialize, stderr

    from mcp_bridge.stdio.config import daemon_healthy

    try:
        first, up_first, err = session()  # no cache yet: waits for the daemon, then caches its answers
        assert up_first is True and (home / "bridge-cache.json").exists(), err
        assert (home / "bridge-cache.json").stat().st_mode & 0o777 == 0o600
        _stop_recorded_daemon(home)
        second, up_second, err = session()
        assert up_second is False, err  # answered before the daemon was there
        assert "starting the Vetted daemon" in err
        assert second[0]["result"] == first[0]["result"] and second[1]["result"] == first[1]["result"]
        assert second[2]["result"]["structuredContent"]["agent"]["name"] == "cold"  # then the real call
    finally:
        _stop_recorded_daemon(home)


def test_the_cache_is_ignored_when_what_the_answers_depend_on_changed(tmp_path):
    from mcp_bridge.stdio.warm import AnswerCache

    env = {"VETTED_HOME": str(tmp_path), "VETTED_MAX_BODY_CHARS": "100"}
    cache = AnswerCache(tmp_path, "vt_a", env)
    assert cache.put("2025-06-18", "initialize", {"protocolVersion": "2025-06-18"}) is True
    assert cache.put("2025-06-18", "initialize", {"protocolVersion": "2025-06-18"}) is False  # unchanged
    assert AnswerCache(tmp_path, "vt_a", env).get("2025-06-18", "initialize")
    assert AnswerCache(tmp_path, "vt_b", env).get("2025-06-18", "initialize") is None  # another agent's
    assert (
        AnswerCache(tmp_path, "vt_a", {**env, "VETTED_MAX_BODY_CHARS": "200"}).get("2025-06-18", "initialize") is None
    )
    assert AnswerCache(tmp_path, "vt_a", env).get("2025-11-25", "initialize") is None  # another protocol version
    AnswerCache(tmp_path, "vt_b", env).put("2025-06-18", "initialize", {"protocolVersion": "x"})
    assert AnswerCache(tmp_path, "vt_a", env).get("2025-06-18", "initialize")  # both agents' entries kept
    assert "vt_a" not in (tmp_path / "bridge-cache.json").read_text()


def test_a_bridge_waits_for_a_daemon_that_is_already_starting(migrated, tmp_path):
    """`make run` is loading the model when a client spawns the bridge: the
    daemon the bridge starts is refused at once (serve.json says one is
    starting), and the bridge waits for that one instead of failing."""
    from common import listening

    home = tmp_path / "home"
    env, token = _home_with_agent(migrated, home)
    port = free_port()
    # The daemon that is "loading its model": recorded as starting on that port by a live process (this one).
    listening.write(home, host="127.0.0.1", port=port, state="starting")
    session = [INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "describe"}}]
    bridge_env = {**env, "VETTED_URL": f"http://127.0.0.1:{port}", "VETTED_TOKEN": token, "VETTED_AUTOSTART": "1"}
    bridge = subprocess.Popen(
        BRIDGE, env=bridge_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    bridge.stdin.write("".join(json.dumps(m) + "\n" for m in session))
    bridge.stdin.flush()
    log = home / "daemon.log"
    deadline = time.monotonic() + 90
    while "Vetted is starting" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "Vetted is starting" in log.read_text()  # the bridge's own serve was refused at once
    time.sleep(0.5)
    assert bridge.poll() is None  # ... and the bridge keeps waiting
    # The awaited daemon comes up on that port (same database, its own data folder for its record).
    awaited = subprocess.Popen(
        [sys.executable, str(PROJECT / "manage.py"), "serve", "--port", str(port)],
        env={**env, "VETTED_HOME": str(tmp_path / "other"), "VETTED_DB_PATH": str(home / "vetted.sqlite3")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        out, err = bridge.communicate(timeout=120)
        replies = [json.loads(line) for line in out.splitlines()]
        assert [r.get("id") for r in replies] == [1, 2] and all("result" in r for r in replies), err
        assert replies[0]["result"]["serverInfo"]["name"] == "vetted"
        assert replies[1]["result"]["structuredContent"]["agent"]["name"] == "cold"
    finally:
        awaited.terminate()
        awaited.wait(timeout=30)
