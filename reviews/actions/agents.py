"""Agents and their tokens: create, revoke, rotate, authenticate, the import agent."""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Callable, Collection, Iterable

from django.db import transaction
from django.utils import timezone

from .. import space_access
from .. import validation as v
from ..errors import InvalidTransition, NotFound, Unauthorized, ValidationFailed
from ..models import Agent
from ..oauth_models import OAuthGrant, OAuthToken, TokenKind
from ..space_access import space_slugs
from ._common import Actor, SystemActor, audit, locked_agent, require_reviewer
from .spaces import check_grants

IMPORT_AGENT_NAME = "import"
TOKEN_PREFIX = "vt_"
_AGENT_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,63}$")

log = logging.getLogger(__name__)


def token_digest(token: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is enough: there is nothing
    # to brute-force, and lookups by digest stay a single index probe.
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _own_name(name: str, person: object) -> str:
    """A free name in ``person``'s namespace (``NAME-USERNAME``, then a counter),
    to suggest when ``name`` is in use."""
    user = re.sub(r"[^a-z0-9._-]", "-", str(getattr(person, "get_username", lambda: "")()).lower()) or "me"
    base = f"{name[: 62 - len(user)]}-{user}"[:64]
    candidate, n = base, 2
    while Agent.objects.filter(name=candidate).exists():
        candidate, n = f"{base[:60]}-{n}", n + 1
    return candidate


def create_agent(
    name: str, *, spaces: Iterable[str], actor: Actor, source_tool: str = "", with_token: bool = True
) -> tuple[Agent, str]:
    """Create an agent and return it with its raw token, which is not stored
    and cannot be shown again (only its SHA-256 digest is kept). An agent made
    at an OAuth consent has no static token (``with_token=False``, returns "")."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        name = str(name or "").strip().lower()
        errors = {}
        if not _AGENT_NAME_RE.match(name):
            errors["name"] = (
                "2-64 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        elif name == IMPORT_AGENT_NAME or Agent.objects.filter(name=name).exists():
            # Names stay unique on the instance: a name is the agent's handle in
            # the write log, the inbox filters and the command line, so one name
            # is one agent. The refusal says the same whoever holds the name
            # (you, someone else, a revoked agent, the reserved import agent)
            # and names none of them: it tells only that the name is in use,
            # and offers one in the creator's own namespace. That
            # one bit is accepted: docs/spaces.md, "People's agents and sign-ins".
            errors["name"] = f"{name!r} is not available; choose another name, e.g. {_own_name(name, reviewer)!r}"
        space_list = sorted({str(s).strip().lower() for s in spaces if str(s).strip()})
        # Grants: only spaces the agent's person (the reviewer creating it) is a member of.
        problem = check_grants(reviewer, space_list)
        if problem:
            errors["spaces"] = problem
        if errors:
            raise ValidationFailed(errors)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32) if with_token else ""
        agent = Agent.objects.create(
            name=name,
            spaces=space_list,
            token_digest=token_digest(token) if token else None,
            token_prefix=_public_prefix(token),
            source_tool=v.clean_short("source_tool", source_tool, v.SOURCE_TOOL_MAX),
            created_by=reviewer.get_username(),
            owner=reviewer,
        )
        extra: dict[str, object] = {"spaces": space_list}
        if not with_token:
            extra["oauth"] = True
        audit("agent.created", actor=actor, subject=agent, snippet=name, extra=extra)
        return agent, token


def revoke_agent(agent: Agent | str, *, actor: Actor) -> Agent:
    """Revoke an agent: its token and its OAuth grants (with their tokens)
    stop working at once. Its proposals stay. Only its person, an owner of a
    space it is granted (space_access.sees_agent), or a superuser (the
    operator's emergency stop) may; to anyone else it does not exist."""
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        agent = locked_agent(agent)
        if not (reviewer.is_superuser or space_access.sees_agent(reviewer, agent)):
            raise NotFound(f"No agent named {agent.name!r}.")
        if not agent.is_active:
            raise InvalidTransition(f"Agent {agent.name!r} was already revoked on {agent.revoked_at:%Y-%m-%d}.")
        agent.is_active = False
        agent.revoked_at = timezone.now()
        agent.save(update_fields=["is_active", "revoked_at"])
        grants = _revoke_grants(agent)
        audit(
            "agent.revoked",
            actor=actor,
            subject=agent,
            snippet=agent.name,
            extra={"oauth_grants": grants} if grants else None,
        )
        return agent


def rotate_agent_token(agent: Agent | str, *, actor: Actor) -> tuple[Agent, str]:
    """Give an active agent a new token; the old one, if any, stops working at
    once (an agent imported without token digests has none and gets its
    first here). Returns the agent and the raw token (shown once, never stored)."""
    with transaction.atomic():
        require_reviewer(actor)
        agent = locked_agent(agent)
        if agent.name == IMPORT_AGENT_NAME:
            raise InvalidTransition(f"{IMPORT_AGENT_NAME!r} is the tokenless import agent; it never gets a token.")
        if not agent.is_active:
            raise InvalidTransition(f"Agent {agent.name!r} is revoked; create a new agent instead.")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        old_prefix = agent.token_prefix if agent.token_digest else ""
        agent.token_digest = token_digest(token)
        agent.token_prefix = _public_prefix(token)
        agent.save(update_fields=["token_digest", "token_prefix"])
        audit(
            "agent.token_rotated",
            actor=actor,
            subject=agent,
            snippet=agent.name,
            extra={"old_prefix": old_prefix, "new_prefix": agent.token_prefix},
        )
        return agent, token


def _revoke_grants(agent: Agent) -> list[str]:
    now = timezone.now()
    grants = list(OAuthGrant.objects.select_for_update().filter(agent=agent, revoked_at=None))
    OAuthGrant.objects.filter(pk__in=[g.pk for g in grants]).update(revoked_at=now)
    OAuthToken.objects.filter(grant__in=grants, revoked_at=None).update(revoked_at=now)
    return [g.public_id for g in grants]


OAUTH_ACCESS_PREFIX = TOKEN_PREFIX + "at_"


def agent_for_token(token: str, *, address: str = "", via: str = "", audiences: Collection[str] = ()) -> Agent:
    """The active agent a bearer token belongs to; raises Unauthorized with a
    message that says what is wrong and how to fix it. Reads only.

    A static agent token works everywhere. An OAuth access token works only
    at an endpoint whose ``audiences`` include the resource it was issued for
    (RFC 8707; no audience given: refused), and the agent it returns carries
    the grant's spaces (never more than the agent's own), in memory only.

    A refusal is logged with which check failed, ``via`` (the interface) and
    ``address`` (the client's), and at most the token's public prefix (the
    part the agents page shows), never the token."""

    def refuse(failure: str, message: str, detail: str = "") -> Unauthorized:
        log.info("agent auth failed: %s via=%s address=%s%s", failure, via or "-", address or "-", detail)
        return Unauthorized(message)

    token = (token or "").strip()
    if not token:
        raise refuse(
            "missing",
            "Missing agent token: send the header 'Authorization: Bearer vt_...' "
            "(create one with `python manage.py create_agent NAME --spaces ...`).",
        )
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        # Not one of ours: perhaps another service's secret, so not even a prefix.
        raise refuse(
            "malformed", f"Malformed agent token: Vetted tokens start with {TOKEN_PREFIX!r}.", f" length={len(token)}"
        )
    if token.startswith(OAUTH_ACCESS_PREFIX):
        return _agent_for_oauth(token_digest(token), audiences, refuse)
    agent = Agent.objects.filter(token_digest=token_digest(token)).first()
    if agent is None:
        raise refuse(
            "unknown",
            "Unknown agent token: it was never issued here or has been replaced; "
            "ask the reviewer for a new one (`python manage.py connect CLIENT --agent NAME`).",
            # The public prefix (as the agents page shows it) without its "vt_": the log
            # scrubber (common/logscrub.py) redacts anything shaped like a token.
            " token_start=" + re.sub(r"[^A-Za-z0-9_-]", "?", _public_prefix(token)[len(TOKEN_PREFIX) :]),
        )
    if not agent.is_active:
        when = f" on {agent.revoked_at:%Y-%m-%d}" if agent.revoked_at else ""
        raise refuse(
            "revoked",
            f"Agent {agent.name!r} was revoked{when}; its token no longer works. Ask the reviewer for a new agent.",
            f" agent={agent.name} ({agent.public_id})",
        )
    return agent


def _agent_for_oauth(digest: str, audiences: Collection[str], refuse: Callable[..., Unauthorized]) -> Agent:
    row = (
        OAuthToken.objects.select_related("grant", "grant__agent").filter(digest=digest, kind=TokenKind.ACCESS).first()
    )
    again = " Sign in again (your client starts the OAuth flow on this 401)."
    if row is None:
        raise refuse("oauth-unknown", "Unknown OAuth access token: it was never issued here." + again)
    grant = row.grant
    if row.revoked_at is not None or grant.revoked_at is not None:
        raise refuse("oauth-revoked", "This OAuth access token was revoked." + again, f" grant={grant.public_id}")
    if row.expires_at < timezone.now():
        raise refuse("oauth-expired", "This OAuth access token has expired; refresh it." + again)
    if grant.resource not in audiences:
        raise refuse(
            "oauth-audience",
            f"This OAuth access token was issued for {grant.resource[:200]!r}, not for this endpoint "
            f"({', '.join(sorted(audiences)) or 'none'}).",
            f" grant={grant.public_id}",
        )
    agent = grant.agent
    if not agent.is_active:
        raise refuse("revoked", f"Agent {agent.name!r} was revoked; its OAuth grants no longer work.")
    # The grant may narrow the agent's scopes: this instance is never saved.
    agent.spaces = effective_spaces(agent.spaces, grant.scopes)
    agent.oauth_grant = grant  # type: ignore[attr-defined]  # for note_agent_seen
    agent.oauth_token = row  # type: ignore[attr-defined]  # for agent_for_credential
    return agent


def effective_spaces(agent_spaces: Iterable[str], signed_in: Iterable[str] | None) -> list[str]:
    """The spaces a credential may see, the one rule: the agent's grants as
    stored now, narrowed to what its OAuth sign-in was granted (``None`` for
    a static token, which carries the agent's own). Every agent-facing read,
    write and notice takes its spaces from an agent resolved through here."""
    if signed_in is None:
        return list(agent_spaces)
    allowed = set(signed_in)
    return [s for s in agent_spaces if s in allowed]


def credential_of(token: str) -> tuple[str, bool]:
    """What an open stream keeps of the bearer token that opened it: its
    digest (never the token) and whether it is an OAuth access token."""
    token = (token or "").strip()
    return token_digest(token), token.startswith(OAUTH_ACCESS_PREFIX)


def agent_for_credential(digest: str, oauth: bool, *, audiences: Collection[str] = ()) -> Agent | None:
    """The agent a credential (``credential_of``) still stands for, with the
    spaces it may see now, or None once it ended: the token revoked, expired
    or replaced (a static token rotated; an OAuth access token whose grant
    has since issued a newer one, or whose grant was revoked), or the agent
    revoked. An open stream asks this on every pass and ends on None."""

    def refuse(failure: str, message: str, detail: str = "") -> Unauthorized:
        log.info("agent stream ended: %s%s", failure, detail)
        return Unauthorized(message)

    if oauth:
        try:
            signed_in = _agent_for_oauth(digest, audiences, refuse)
        except Unauthorized:
            return None
        row = signed_in.oauth_token  # type: ignore[attr-defined]
        newer = OAuthToken.objects.filter(grant_id=row.grant_id, kind=TokenKind.ACCESS, pk__gt=row.pk)
        if newer.exists():
            refuse("oauth-rotated", "", f" grant={row.grant.public_id}")
            return None
        return signed_in
    agent = Agent.objects.filter(token_digest=digest, is_active=True).first()
    if agent is None:
        log.info("agent stream ended: token revoked or replaced")
    return agent


def _public_prefix(token: str) -> str:
    """As much of a token as Agent.token_prefix keeps (and the agents page shows)."""
    return token[:10]


SEEN_EVERY_SECONDS = 60


def note_agent_seen(agent: Agent) -> None:
    """Bookkeeping, not a change to memory: stamp ``last_seen_at`` at most once
    a minute per agent, so the inbox can show when an agent was last active.
    Writes no audit event (it would record every request); changes nothing
    an agent or a reviewer decides."""
    now = timezone.now()
    if agent.last_seen_at and (now - agent.last_seen_at).total_seconds() < SEEN_EVERY_SECONDS:
        return
    Agent.objects.filter(pk=agent.pk).update(last_seen_at=now)
    agent.last_seen_at = now
    grant = getattr(agent, "oauth_grant", None)
    if grant is not None:
        OAuthGrant.objects.filter(pk=grant.pk).update(last_used_at=now)


def import_agent() -> Agent:
    """The agent that import proposals are attributed to (created on first use)."""
    with transaction.atomic():
        agent = Agent.objects.filter(name=IMPORT_AGENT_NAME).first()
        if agent is None:
            agent = Agent.objects.create(
                name=IMPORT_AGENT_NAME, spaces=space_slugs(), source_tool="import", created_by="system"
            )
            audit(
                "agent.created",
                actor=SystemActor("system:import"),
                subject=agent,
                snippet=agent.name,
                extra={"spaces": list(agent.spaces), "tokenless": True},
            )
        elif set(agent.spaces) != set(space_slugs()):
            # Tokenless (it never reads): it proposes into whichever space an
            # import names; the reviewer of that space decides.
            agent.spaces = space_slugs()
            agent.save(update_fields=["spaces"])
        return agent
