"""The OAuth consent page: a remote client (a claude.ai or ChatGPT connector,
Claude Code against an https URL, a phone app) asks to act as an agent, and
the signed-in reviewer says as which agent and in which scopes, or says no.

The request arrives signed by the authorization server (mcp_bridge/oauth),
which has already checked the client, its redirect URI and the PKCE
challenge; this page only decides and calls one action. Either way the
browser goes back to the client's redirect URI with the answer (RFC 6749
§4.1.2), carrying ``iss`` (RFC 9207) so the client knows who answered.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from reviews.actions import IMPORT_AGENT_NAME, oauth
from reviews.errors import ValidationFailed, VettedError
from reviews.models import Agent
from reviews.oauth_models import OAuthClient
from reviews.space_models import Space, SpaceKind

from . import viewer
from .page_helpers import nav_counts, site_login_required


class _ClientRedirect(HttpResponseRedirect):
    """A redirect to the client's registered redirect URI, whose scheme may be
    a private-use one (RFC 8252 §7.1, e.g. com.example.app:)."""

    def __init__(self, url: str):
        self.allowed_schemes = ["http", "https", urlsplit(url).scheme]
        super().__init__(url)
        self["Cache-Control"] = "no-store"


def _answer(request_data: dict, **params: str | None) -> _ClientRedirect:
    """Back to the client: its redirect URI with the answer added to its own query."""
    params = {**params, "state": request_data.get("state"), "iss": settings.VETTED_PUBLIC_URL}
    parts = urlsplit(request_data["redirect_uri"])
    query = parse_qsl(parts.query, keep_blank_values=True) + [(k, v) for k, v in params.items() if v is not None]
    return _ClientRedirect(urlunsplit(parts._replace(query=urlencode(query))))


def _page(request, data: dict, client: OAuthClient, signed: str, errors: dict, values: dict, status: int = 200):
    # Spaces: the person's own agents and spaces only (the action checks both again).
    agents = Agent.objects.filter(is_active=True, owner=request.user).exclude(name=IMPORT_AGENT_NAME).order_by("name")
    for a in agents:
        a.shown_scopes = viewer.shown_spaces(a.spaces)  # type: ignore[attr-defined]  # for the template
    response = render(
        request,
        "reviews/oauth_consent.html",
        {
            **nav_counts(),
            "nav": "agents",
            "client": client,
            "redirect_host": urlsplit(data["redirect_uri"]).netloc or data["redirect_uri"].split(":", 1)[0] + ":",
            "resource": data["resource"],
            "signed": signed,
            "agents": agents,
            "scopes": viewer.readable() or [],
            "errors": errors,
            "values": values,
        },
        status=status,
    )
    response["Cache-Control"] = "no-store"
    return response


def _requested(asked: list[str]) -> list[str]:
    """What the form starts with: the client asks in OAuth's fixed scope names
    (personal, team, system: its metadata names no space); ``personal`` is the
    person's personal space, a name that is one of their spaces is itself."""
    mine = viewer.readable() or []
    personal = list(Space.objects.filter(slug__in=mine, kind=SpaceKind.PERSONAL).values_list("slug", flat=True))
    chosen = [s for s in asked if s in mine and s != "personal"]
    if "personal" in asked or not chosen:
        chosen += personal[:1]
    return list(dict.fromkeys(chosen))


@never_cache
@site_login_required
@require_http_methods(["GET", "POST"])
def consent(request):
    signed = request.GET.get("request") or request.POST.get("request", "")
    try:
        data = oauth.read_authorization_request(signed)
    except ValidationFailed as exc:
        return HttpResponse(exc.fields["request"], status=400, content_type="text/plain")
    client = OAuthClient.objects.filter(client_id=data["client_id"]).first()
    if client is None:
        return HttpResponse("This client is not known here; start the sign-in again.", status=400)
    if request.method == "GET":
        requested = _requested(data.get("scopes") or [])
        return _page(request, data, client, signed, {}, {"scopes": requested, "agent": "", "new_agent_name": ""})
    if request.POST.get("decision") != "allow":
        return _answer(data, error="access_denied", error_description="The reviewer declined.")
    values = {
        "agent": request.POST.get("agent", ""),
        "new_agent_name": request.POST.get("new_agent_name", "").strip(),
        "scopes": request.POST.getlist("scopes"),
    }
    try:
        _grant, code = oauth.grant_oauth_consent(
            actor=request.user,
            client_id=client.client_id,
            redirect_uri=data["redirect_uri"],
            redirect_uri_explicit=bool(data.get("redirect_uri_explicit", True)),
            code_challenge=data["code_challenge"],
            resource=data["resource"],
            scopes=values["scopes"],
            agent=values["agent"] if values["agent"] and values["agent"] != "new" else None,
            new_agent_name=values["new_agent_name"] if values["agent"] in ("", "new") else "",
        )
    except ValidationFailed as exc:
        return _page(request, data, client, signed, exc.fields, values, status=400)
    except VettedError as exc:
        return _page(request, data, client, signed, {"form": exc.message}, values, status=400)
    return _answer(data, code=code)
