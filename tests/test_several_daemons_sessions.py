"""The per-agent MCP session cap is one cap across daemons (PostgreSQL):
sessions an agent opens on two daemons count together, and the oldest are
closed whichever daemon holds them."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.test_several_daemons import MCP_HEADERS, MCP_INIT

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="one SQLite file has one daemon (the serve lock)"
)
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


@postgres_only
@pytest.mark.slow
@pytest.mark.postgres_slow
def test_an_agents_sessions_on_two_daemons_count_against_one_cap(tmp_path, agent_tokens):
    """Two real daemons (the cap is per process unless the database keeps
    it). Cap 2: two sessions on A, then two on B: only B's two still answer;
    A's answer 404 (closed to make room), and so would a third anywhere."""
    from tests.gateway_support import http, running_daemon

    token = agent_tokens["claude-code"]
    cap = {"VETTED_MCP_SESSIONS_PER_AGENT": "2"}
    with running_daemon(tmp_path, **cap) as a, running_daemon(tmp_path, **cap) as b:
        opened = []
        for daemon in (a, a, b, b):
            status, headers, _body = http("POST", daemon.base + "/mcp", token=token, body=MCP_INIT, headers=MCP_HEADERS)
            assert status == 200 and headers.get("mcp-session-id")
            opened.append((daemon, headers["mcp-session-id"]))
        answers = []
        for daemon, session_id in opened:
            session = {**MCP_HEADERS, "Mcp-Session-Id": session_id, "Mcp-Protocol-Version": "2025-11-25"}
            answers.append(http("POST", daemon.base + "/mcp", token=token, body=PING, headers=session)[0])
        assert answers == [404, 404, 200, 200], (answers, a.log()[-1500:])
        # Another agent's sessions are its own.
        status, _h, _b = http(
            "POST", a.base + "/mcp", token=agent_tokens["team-bot"], body=MCP_INIT, headers=MCP_HEADERS
        )
        assert status == 200
