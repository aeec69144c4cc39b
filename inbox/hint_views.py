"""The hint beside a proposal (similar records and proposals, possible
contradictions, other pending proposals about the same record) and the two
decisions it offers on a close match: merge the create into a revision of a
record, or reject it as a duplicate.

Each card fetches its hint as soon as it is on the page (hx-trigger="load"),
not in the inbox's own request: one embedding per card would make the inbox
itself slow; static/vetted/hints.js holds a decision key pressed on a card
whose hint has not come yet. Both decisions are plain form POSTs that also
work with htmx (the changed card comes back).
"""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from retrieval.index import IndexModelMismatch
from reviews import actions
from reviews.errors import VettedError
from reviews.models import Proposal

from . import hints, viewer
from .inbox_views import card_response, failed_response
from .page_helpers import back, nav_counts, site_login_required


@site_login_required
@require_GET
def similar(request, public_id):
    """The hint for one proposal (reviewers only: agents are never told
    about each other's proposals, so the cluster is the reviewer's to see)."""
    proposal = viewer.proposals(Proposal.objects.select_related("target").filter(public_id=public_id)).first()
    found, error = hints.Hints(), ""
    if proposal is not None:
        try:
            found = hints.for_proposal(proposal)
        except VettedError as exc:
            error = exc.message
        except IndexModelMismatch as exc:  # a hint must not break the card
            error = f"{exc} (run `python manage.py reindex`)"
    context = {"hints": found, "error": error, "p": proposal, "proposal_id": public_id, "next": reverse("home")}
    if request.htmx and request.GET.get("flags") == "1":
        return render(request, "reviews/_line_flags.html", context)  # a compact line's word for it
    if request.htmx:
        return render(request, "reviews/_hints.html", context)
    return render(request, "reviews/hints_page.html", {**nav_counts(), "nav": "inbox", **context})


def _done(request, proposal: Proposal, message: str):
    if request.htmx:
        return card_response(request, proposal.public_id)
    messages.success(request, message)
    return back(request, reverse("home") + f"#proposal-{proposal.pk}")


@site_login_required
@require_POST
def merge(request, public_id):
    """Merge a pending create into a revision of the record named in ``target``."""
    try:
        proposal = actions.merge_into_revision(public_id, request.POST.get("target", ""), actor=request.user)
    except VettedError as exc:
        return failed_response(request, public_id, exc)
    target = proposal.target.public_id if proposal.target is not None else ""
    return _done(request, proposal, f"Merged {proposal.public_id} into a revision of {target}: review it below.")


@site_login_required
@require_POST
def reject_duplicate(request, public_id):
    """Reject a proposal as a duplicate of the record or proposal in ``duplicate_of``."""
    try:
        proposal = actions.reject_as_duplicate(
            public_id, request.POST.get("duplicate_of", ""), actor=request.user, note=request.POST.get("note", "")
        )
    except VettedError as exc:
        return failed_response(request, public_id, exc)
    return _done(request, proposal, f"Rejected {proposal.public_id} as a duplicate.")
