"""An OAuth sign-in reaches exactly what was granted, for as long as it is
granted: every read, write and notice through it uses the effective grant
(the agent's spaces as stored now, narrowed to the sign-in's), and an open
MCP stream ends when its credential does (revoked, expired, rotated).

The daemon's own ASGI application in process with the SDK's streamable-HTTP
client (as tests/test_mcp_surface.py), the sign-in made through the actions
the consent page and the token endpoint call."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import anyio
import httpx2
import pytest
from django.utils import timezone
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge import agent_api
from reviews import actions
from reviews.oauth_models import OAuthToken, TokenKind
from tests.conftest import content
from tests.mcp_client import NEW_FACT as FACT
from tests.mcp_client import over_http

pytestmark = pytest.mark.django_db(transaction=True)

REDIRECT = "http://127.0.0.1:33418/callback"


def sign_in(reviewer, agent, scopes: list[str]) -> actions.oauth.IssuedTokens:
    """What the consent page and the token endpoint do for a client that
    signs in as ``agent`` with ``scopes``: the tokens it receives."""
    client = actions.oauth.save_oauth_client(
        f"client-{agent.name}-{'-'.join(scopes)}",
        registration="dynamic",
        client_name="Test Connector",
        redirect_uris=[REDIRECT],
        metadata={},
    )
    _grant, code = actions.oauth.grant_oauth_consent(
        actor=reviewer,
        client_id=client.client_id,
        redirect_uri=REDIRECT,
        redirect_uri_explicit=True,
        code_challenge="x" * 43,
        resource=actions.oauth.mcp_resource(),
        scopes=scopes,
        agent=agent,
    )
    return actions.oauth.exchange_oauth_code(actions.oauth.oauth_code(client.client_id, code))


@contextlib.asynccontextmanager
async def mcp_client(app, token: str, mode: str, on_message=None):
    http = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app),
        base_url="http://127.0.0.1",
        headers={"Authorization": f"Bearer {token}"},
    )
    async with (
        http,
        Client(
            streamable_http_client("http://127.0.0.1/mcp", http_client=http), mode=mode, message_handler=on_message
        ) as c,
    ):
        yield c


def run_app(steps):
    from memory_site.asgi import build_application

    app = build_application()

    async def go():
        async with app.mcp_sessions.run():
            return await steps(app)

    return asyncio.run(go())


@pytest.fixture
def personal_proposal(agent):
    """The agent's own pending proposal in its personal space (made with its full grant)."""
    return actions.propose_create(
        agent=agent, reason="The user said so.", **content(space="personal", title="Rita reads mail at nine")
    )


def test_a_sign_in_granted_team_neither_reads_lists_nor_withdraws_its_agents_personal_proposal(
    reviewer, agent, personal_proposal
):
    tokens = sign_in(reviewer, agent, ["team"])
    pid = personal_proposal.public_id

    async def steps(app):
        async with mcp_client(app, tokens.access_token, "legacy") as c:
            status = await c.call_tool("proposal_status", {"id": pid})
            listed = [str(r.uri) for r in (await c.list_resources()).resources]
            with pytest.raises(MCPError) as read:
                await c.read_resource(f"vetted://proposals/{pid}")
            withdraw = await c.call_tool("withdraw_proposal", {"id": pid})
            return status, listed, read.value, withdraw

    status, listed, read, withdraw = run_app(steps)
    assert status.is_error and "No proposal of yours" in status.content[0].text
    assert "Rita reads mail" not in status.content[0].text
    assert f"vetted://proposals/{pid}" not in listed
    assert "No resource" in str(read)
    assert withdraw.is_error and "No proposal of yours" in withdraw.content[0].text
    personal_proposal.refresh_from_db()
    assert personal_proposal.state == "pending"


def test_the_same_agents_static_token_still_sees_its_personal_proposal(agent, agent_tokens, personal_proposal):
    """The narrowing is the sign-in's: the agent's own token keeps its full grant."""
    answer = agent_api.proposal_status(
        actions.agent_for_token(agent_tokens["claude-code"], via="test"), personal_proposal.public_id
    )
    assert answer["id"] == personal_proposal.public_id


def test_a_change_notice_uses_the_sign_ins_spaces_not_the_agents(reviewer, agent, make_record, personal_proposal):
    personal = make_record(space="personal", title="Rita prefers short answers in the morning")
    tokens = sign_in(reviewer, agent, ["team"])
    credential = agent_api.Credential.of(agent, tokens.access_token)
    assert agent_api.change_notice(credential, f"vetted://records/{personal.public_id}") is None
    actions.reject_proposal(personal_proposal, actor=reviewer, note="Not now.")
    assert agent_api.change_notice(credential, f"vetted://proposals/{personal_proposal.public_id}") is None
    team = make_record()
    assert agent_api.change_notice(credential, f"vetted://records/{team.public_id}") is not None


def _end(how: str, reviewer, tokens) -> None:
    row = OAuthToken.objects.get(digest=actions.credential_of(tokens.access_token)[0])
    if how == "revoked":
        actions.oauth.revoke_oauth_grant(row.grant, actor=reviewer)
    elif how == "expired":
        OAuthToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    else:  # rotated: the client refreshed, a new access token replaces this one
        refresh = OAuthToken.objects.filter(grant=row.grant, kind=TokenKind.REFRESH).get()
        actions.oauth.refresh_oauth_tokens(refresh)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["revoked", "expired", "rotated"])
def test_a_listen_stream_ends_when_its_sign_in_ends(gateway, reviewer, team_agent, how):
    """Against the daemon: a stream needs a real server (the in-process
    transport answers only once the response is complete)."""
    tokens = sign_in(reviewer, team_agent, ["team"])
    proposal = actions.propose_create(agent=team_agent, reason="Said in chat.", **content(title="Deploys on Tuesday"))
    uri = f"vetted://proposals/{proposal.public_id}"

    async def steps(c):
        heard: list[str] = []
        ended = False
        async with c.listen(resource_subscriptions=[uri]) as sub:
            await asyncio.to_thread(_end, how, reviewer, tokens)
            await asyncio.to_thread(actions.reject_proposal, proposal.public_id, actor=reviewer, note="No.")
            with anyio.move_on_after(6):
                async for event in sub:
                    heard.append(str(event.uri))
                ended = True
        return heard, ended

    heard, ended = over_http(gateway.mcp_url, tokens.access_token, steps, "2026-07-28")
    assert heard == [] and ended


@pytest.mark.slow
def test_a_sessions_subscriptions_end_when_its_sign_in_is_revoked(gateway, reviewer, team_agent):
    """Against the daemon, as above."""
    tokens = sign_in(reviewer, team_agent, ["team"])
    proposal = actions.propose_create(agent=team_agent, reason="Said in chat.", **content(title="Deploys on Tuesday"))
    heard: list = []

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            heard.append(root.params)

    async def steps(c):
        await c.session.subscribe_resource(f"vetted://proposals/{proposal.public_id}")
        await asyncio.sleep(0.5)  # the session's stream is open
        await asyncio.to_thread(_end, "revoked", reviewer, tokens)
        await asyncio.to_thread(actions.reject_proposal, proposal.public_id, actor=reviewer, note="No.")
        await asyncio.sleep(3)  # a notice would come within a pass or two
        reached.append(True)

    reached: list[bool] = []
    with contextlib.suppress(Exception):  # the client may complain as its session is closed under it
        over_http(gateway.mcp_url, tokens.access_token, steps, "legacy", on_message)
    assert reached and heard == []
    assert "credential ended" in gateway.log()


def test_a_stream_on_a_static_token_ends_when_the_token_is_rotated(reviewer, team_agent, agent_tokens):
    credential = agent_api.Credential.of(team_agent, agent_tokens["team-bot"])
    assert agent_api.credential_holds(credential)
    actions.rotate_agent_token(team_agent.name, actor=reviewer)
    assert not agent_api.credential_holds(credential)


def test_subscribe_and_unsubscribe_count_as_reads(agent_tokens, settings):
    from mcp_bridge.agent_api import read_limiter

    settings.VETTED_READS_PER_MINUTE = 4
    read_limiter.reset()

    async def steps(app):
        async with mcp_client(app, agent_tokens["team-bot"], "legacy") as c:
            for _ in range(2):
                await c.session.subscribe_resource("vetted://proposals/prop_000000000000")
                await c.session.unsubscribe_resource("vetted://proposals/prop_000000000000")
            with pytest.raises(MCPError) as refused:
                await c.session.subscribe_resource("vetted://proposals/prop_000000000000")
            return refused.value

    try:
        refused = run_app(steps)
    finally:
        read_limiter.reset()
    assert "Rate limit" in str(refused)


def test_proposing_through_a_sign_in_names_only_its_spaces(reviewer, agent):
    tokens = sign_in(reviewer, agent, ["team"])
    signed_in = actions.agent_for_token(
        tokens.access_token, via="test", audiences=actions.oauth.audiences_for(actions.oauth.mcp_resource())
    )
    assert agent_api.spaces(signed_in) == ["team"]
    with pytest.raises(Exception) as refused:
        agent_api.propose_context(signed_in, **{**FACT, "space": "personal"})
    assert "personal" in str(refused.value) and "team" in str(refused.value)
