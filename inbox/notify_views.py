"""Notifications on the site: the live inbox's poll, and the settings page's
controls (send a test notification, rotate the feed key). Thin: the numbers
come from notify.live, the sending from notify.channels, the key from an action."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.http import HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from notify import channels, live, test_message
from notify.models import Channel
from reviews import actions
from reviews.errors import VettedError

from .page_helpers import site_login_required


@site_login_required
@require_GET
def live_inbox(request):
    """The banner "N new proposals, show them", the header counts (out of
    band) and the tab title. At most one indexed COUNT beyond the cache."""
    try:
        after = max(0, int(request.GET.get("since", "0")))
    except ValueError:
        after = 0
    known = live.counts(request.user)  # spaces: the viewer's counts only
    context = {
        **known,
        "after": after,
        "new": live.newer_than(after, known),
        "poll_seconds": live.POLL_SECONDS,
        "show_url": _inbox_shown(request),
    }
    return render(request, "notify/_live_poll.html", context)


def _inbox_shown(request) -> str:
    """Where "show them" leads: the inbox the reviewer has open, with its
    filters and order (htmx names it in HX-Current-URL), else the plain inbox."""
    home = reverse("home")
    current = urlsplit(request.headers.get("HX-Current-URL", ""))
    if current.path != home or not current.query:
        return home
    return f"{home}?{current.query}"


@site_login_required
@require_POST
def test_notification(request):
    """Send one test message on a configured channel now, and say how it
    went. The operator's only (notify/test_message.py): 403 for anyone else."""
    channel = request.POST.get("channel", "")
    if not test_message.may_send(request.user):
        return HttpResponseForbidden(
            "Only the operator (a superuser) may send test notifications to the operator's channels.",
            content_type="text/plain; charset=utf-8",
        )
    try:
        messages.success(request, test_message.send_test(request.user, channel))
    except test_message.TestRefused as exc:
        messages.error(request, str(exc))
    except channels.SendFailed as exc:
        messages.error(request, f"The test {Channel(channel).label.lower()} was not delivered: {exc}.")
    return redirect("site_settings")


@site_login_required
@require_POST
def rotate_feed(request):
    try:
        actions.rotate_feed_key(actor=request.user)
    except VettedError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Made a new feed URL; the old one no longer works.")
    return redirect("site_settings")
