"""The spaces the credential in use may see, in one place.

An agent reaches Vetted with a credential: its static token (the agent's own
grants) or an OAuth access token (the agent's grants narrowed to what the
sign-in was granted). ``reviews.actions.agent_for_token`` and, for an open
stream, ``agent_for_credential`` resolve it to an ``Agent`` whose ``spaces``
hold exactly that effective grant (``reviews.actions.effective_spaces``);
nothing here reloads an agent by id, which would widen it back to every
space the agent holds. Reads, writes and notices ask ``spaces`` and
``own_proposals``: an agent's proposal in a space the credential was not
granted does not exist for it (the same 404 as an unknown id).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from reviews import actions, space_access
from reviews.models import Agent, Proposal


def spaces(agent: Agent) -> list[str]:
    """Slugs of the spaces the credential behind ``agent`` may see."""
    return list(agent.spaces)


def own_proposals(agent: Agent) -> QuerySet[Proposal]:
    """The agent's own proposals in the spaces its credential may see."""
    return Proposal.objects.filter(space_access.proposals_in(spaces(agent)), agent=agent)


@dataclass(frozen=True)
class Credential:
    """What an open stream keeps of the token that opened it (its digest, never the token)."""

    agent_id: str
    digest: str
    oauth: bool

    @classmethod
    def of(cls, agent: Agent, token: str) -> Credential:
        digest, oauth = actions.credential_of(token)
        return cls(agent.public_id, digest, oauth)


def agent_for(credential: Credential) -> Agent | None:
    """The agent this credential still stands for, with its effective
    spaces now; None once the credential ended (revoked, expired, rotated)."""
    audiences = actions.oauth.audiences_for(actions.oauth.mcp_resource())
    agent = actions.agent_for_credential(credential.digest, credential.oauth, audiences=audiences)
    if agent is None or agent.public_id != credential.agent_id:
        return None
    return agent


def credential_holds(credential: Credential) -> bool:
    """Whether an open stream's credential still stands (see ``agent_for``)."""
    return agent_for(credential) is not None
