"""Invitations: an owner makes a one-time link on a space's page; the
invited person opens it, signed out, and makes their account.

``/invite/?token=…`` answers without credentials, so it tells nothing
without a valid token (unknown, used and expired links get one answer,
naming no space), and failed tries count like failed sign-ins (django-axes:
the same limit and lockout, by address, listed and cleared on Settings).
The token travels as ``token``, a parameter the log scrubber redacts, and
in the form's body; the page is not cached and its referrer is the site's
origin only. Owners list a space's open links and revoke one here too.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from reviews import actions, policy
from reviews.errors import NotFound, ValidationFailed, VettedError

from .page_helpers import nav_counts, site_login_required
from .space_views import detail_response
from .views import lockout_response


def _private(response):
    response["Cache-Control"] = "no-store"
    # The referrer is the site's origin only, never the page's address (which
    # holds the token). Not "no-referrer": with it Chromium sends the sign-up
    # form with ``Origin: null`` and Django's CSRF check refuses the POST.
    response["Referrer-Policy"] = "strict-origin"
    return response


def _list_page(request, slug: str, status: int = 200):
    """The open links of a space, who made each and when it expires (owners only)."""
    try:
        rows = actions.open_invitations(slug, actor=request.user)
    except NotFound:
        raise Http404("No such space.") from None
    except VettedError as exc:
        context = {**nav_counts(), "nav": "spaces", "slug": slug, "refused": exc.message}
        return render(request, "reviews/spaces/invitations.html", context, status=403)
    context = {**nav_counts(), "nav": "spaces", "slug": slug, "invitations": rows}
    return render(request, "reviews/spaces/invitations.html", context, status=status)


@site_login_required
@require_http_methods(["GET", "POST"])
def invitations(request, slug):
    """GET: the space's open links; POST: make one (see ``create``)."""
    if request.method == "GET":
        return _list_page(request, slug)
    return create(request, slug)


@site_login_required
@require_POST
def revoke(request, slug, pk):
    """An owner takes back an open link; it then answers like an unknown one."""
    try:
        invitation = actions.revoke_invitation(slug, pk, actor=request.user)
    except NotFound as exc:
        if not policy.sees(request.user, slug):
            raise Http404("No such space.") from None  # the same 404 as an unknown space
        messages.error(request, exc.message)
    except VettedError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Revoked the {invitation.role} link made by {invitation.created_by.get_username()}: it no longer works.",
        )
    return redirect(reverse("space_invite", args=[slug]))


def create(request, slug):
    """An owner makes an invitation; its link is in this one response only."""
    role = request.POST.get("role", "")
    try:
        invitation, token = actions.create_invitation(slug, role=role, actor=request.user)
    except NotFound:
        return detail_response(request, slug)  # the 404 of a space the viewer does not see
    except VettedError as exc:
        messages.error(request, exc.message)
        return redirect(reverse("space_detail", args=[slug]))
    link = request.build_absolute_uri(f"{reverse('invitation')}?token={token}")
    return _private(detail_response(request, slug, invitation=invitation, invitation_link=link))


def _credentials(request) -> dict:
    # Failures are counted by address: a name of their own per address, so
    # one address's guesses never lock another's invitation (nor an account).
    AxesProxyHandler.update_request(request)
    return {"username": f"invitation-link@{request.axes_ip_address}"}


@require_http_methods(["GET", "POST"])
def invitation(request):
    token = request.POST.get("token", "") if request.method == "POST" else request.GET.get("token", "")
    credentials = _credentials(request)
    if AxesProxyHandler.is_locked(request, credentials):
        return lockout_response(request, credentials=credentials)
    values = {"username": request.POST.get("username", "")}
    try:
        if request.method == "POST":
            user = actions.accept_invitation(
                token,
                username=values["username"],
                password=request.POST.get("password", ""),
                password2=request.POST.get("password2", ""),
            )
            messages.success(request, f"Welcome, {user.get_username()}: your account is ready. Sign in.")
            return redirect(reverse("login"))
        found = actions.open_invitation(token)
    except NotFound as exc:
        AxesProxyHandler.user_login_failed(sender=__name__, credentials=credentials, request=request)
        if getattr(request, "axes_locked_out", False):
            return lockout_response(request, credentials=credentials)
        return _private(render(request, "reviews/spaces/invitation.html", {"invalid": exc.message}, status=404))
    except ValidationFailed as exc:
        found = actions.open_invitation(token)
        context = {"inv": found, "token": token, "errors": exc.fields, "values": values}
        return _private(render(request, "reviews/spaces/invitation.html", context, status=400))
    context = {"inv": found, "token": token, "errors": {}, "values": values}
    return _private(render(request, "reviews/spaces/invitation.html", context))
