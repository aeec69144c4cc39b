"""Agents: who may read and propose; create one (token shown once) or revoke it."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.db.models import Count, Prefetch, Q
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from common import clients
from reviews import actions, space_access
from reviews.errors import ValidationFailed, VettedError
from reviews.models import Agent, ProposalState
from reviews.oauth_models import OAuthGrant

from . import viewer
from .page_helpers import back, nav_counts, site_login_required


def _context(**extra) -> dict:
    # Spaces: the viewer's own agents and those granted a space
    # they own (space_access.sees_agent); their grants and proposal counts
    # only within the spaces the viewer may read.
    readable = viewer.readable() or []
    mine = space_access.proposals_in(readable, prefix="proposals__")
    rows = Agent.objects.annotate(
        accepted=Count("proposals", filter=Q(proposals__state=ProposalState.ACCEPTED) & mine),
        rejected=Count("proposals", filter=Q(proposals__state=ProposalState.REJECTED) & mine),
        pending=Count("proposals", filter=Q(proposals__state=ProposalState.PENDING) & mine),
    ).order_by("-is_active", "name")
    # OAuth grants (remote clients acting as the agent), newest first, with their client.
    rows = rows.prefetch_related(Prefetch("oauth_grants", queryset=OAuthGrant.objects.select_related("client")))
    agents = viewer.agents(rows)
    for a in agents:
        a.shown_spaces = viewer.shown_spaces(a.spaces)  # type: ignore[attr-defined]  # for the template
        for g in a.oauth_grants.all():
            g.shown_scopes = viewer.shown_spaces(g.scopes)  # type: ignore[attr-defined]  # for the template
    return {**nav_counts(), "nav": "agents", "agents": agents, "spaces": readable, "errors": {}, "values": {}, **extra}


@site_login_required
@require_GET
def agents(request):
    return render(request, "reviews/agents.html", _context())


@site_login_required
@require_POST
def create(request):
    values = {
        "name": request.POST.get("name", ""),
        "spaces": request.POST.getlist("spaces"),
        "source_tool": request.POST.get("source_tool", ""),
    }
    try:
        agent, token = actions.create_agent(
            values["name"], spaces=values["spaces"], actor=request.user, source_tool=values["source_tool"]
        )
    except ValidationFailed as exc:
        return render(request, "reviews/agents.html", _context(errors=exc.fields, values=values), status=400)
    except VettedError as exc:
        return render(request, "reviews/agents.html", _context(errors={"form": exc.message}, values=values), status=400)
    # The token is in this one response only (not stored, not in a redirect):
    # tell the browser and any proxy not to keep the page.
    snippets = clients.snippets(
        token, url=request.build_absolute_uri("/").rstrip("/"), home=Path(settings.VETTED_HOME).resolve()
    )
    response = render(request, "reviews/agents.html", _context(created=agent, token=token, snippets=snippets))
    response["Cache-Control"] = "no-store"
    return response


@site_login_required
@require_POST
def revoke(request, name):
    try:
        agent = actions.revoke_agent(name, actor=request.user)
    except VettedError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Revoked {agent.name}: its token no longer works.")
    return back(request, reverse("agents"))


@site_login_required
@require_POST
def revoke_grant(request, public_id):
    """Revoke one OAuth grant (the client's tokens stop working at once); the agent stays."""
    try:
        grant = actions.oauth.revoke_oauth_grant(public_id, actor=request.user)
    except VettedError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Revoked {grant.client}'s sign-in as {grant.agent.name}: its tokens no longer work.")
    return back(request, reverse("agents"))
