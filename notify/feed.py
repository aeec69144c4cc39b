"""The Atom feed of pending proposals and open disputes, at a reviewer's
secret URL (``/feed/atom?key=SECRET``). The secret travels as the ``key``
query parameter, which common/logscrub.py redacts from every log line,
the daemon's access log included. Titles only, never a body; only the
spaces in VETTED_NOTIFY_SPACES that the key's person decides in; an unknown key and a key of a reviewer who
may no longer review get the same 404."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpResponse
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_GET

from reviews.models import Proposal, ProposalAction, ProposalState

from . import recipients
from .channels import clean_text
from .models import FeedKey

FEED_ITEMS = 100


def _title(p: Proposal) -> str:
    if p.action in (ProposalAction.CREATE, ProposalAction.REVISE):
        text = p.title
    else:
        approved = p.target.approved_version() if p.target is not None else None
        text = str(approved["title"]) if approved else (p.target.public_id if p.target is not None else "")
    word = {"create": "New", "revise": "Revision", "retire": "Retire", "dispute": "Dispute"}[p.action]
    return clean_text(f"{word}: {text}")


def feed_for_spaces(spaces: list[str]) -> Atom1Feed:
    base = settings.VETTED_PUBLIC_URL
    feed = Atom1Feed(
        title="Vetted: waiting for review",
        link=base + "/",
        description="Pending proposals and open disputes",
        feed_url=None,
        language="en",
    )
    pending = (
        Proposal.objects.filter(state=ProposalState.PENDING)
        .select_related("agent", "target")
        .order_by("-created_at", "-id")
    )
    shown = 0
    for p in pending.iterator():
        space = (
            p.space if p.action in (ProposalAction.CREATE, ProposalAction.REVISE) else getattr(p.target, "space", "")
        )
        if space not in spaces:
            continue
        link = f"{base}/disputed/" if p.action == ProposalAction.DISPUTE else f"{base}/proposals/{p.public_id}/"
        feed.add_item(
            title=_title(p),
            link=link,
            description=f"{p.get_action_display()} by {clean_text(p.proposer_label, 64)} ({space})",
            author_name=clean_text(p.proposer_label, 64),
            pubdate=p.created_at,
            updateddate=p.created_at,
            unique_id=f"urn:vetted:{p.public_id}",
            categories=[p.action, space],
        )
        shown += 1
        if shown >= FEED_ITEMS:
            break
    return feed


@require_GET
def atom(request):
    secret = request.GET.get("key", "")
    key = FeedKey.objects.select_related("user").filter(secret=secret).first() if secret else None
    if key is None or not (key.user.is_active and key.user.is_staff):
        raise Http404("No such feed.")
    response = HttpResponse(content_type="application/atom+xml; charset=utf-8")
    # Spaces: the key's person is told only of the spaces they decide in.
    feed_for_spaces(sorted(recipients.spaces_of(key.user))).write(response, "utf-8")
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response
