"""Triage on the inbox: the filter bar's context, the reviewer's view
(cards or the compact list) and "select all that match" (a confirm that
posts the matching ids to the ordinary bulk decision, so every proposal is
still its own action and transaction).
"""

from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.utils.timesince import timesince
from django.views.decorators.http import require_GET

from reviews import actions
from reviews.models import InboxView, Proposal, ProposalAction

from . import filters as inbox_filters
from .page_helpers import nav_counts, site_login_required

# The ordinary bulk decision takes at most this many ids (inbox_views.BULK_MAX
# imports it from here, so the cap lives once).
BULK_MAX = 100


def chosen_view(request) -> tuple[str, str]:
    """The reviewer's inbox view and an error: ``?view=`` switches and stores
    it (per reviewer, ReviewerPreference); without it, the stored one."""
    asked = (request.GET.get("view") or "").strip()
    if not asked:
        return actions.inbox_view_of(request.user), ""
    if asked not in InboxView.values:
        allowed = ", ".join(InboxView.values)
        return actions.inbox_view_of(request.user), f"view={asked[:20]!r} is not one of: {allowed}."
    return actions.set_inbox_view(request.user, asked), ""


def age(proposal: Proposal) -> str:
    """ "3 hours" rather than "3 hours, 12 minutes": a line has room for one unit."""
    return timesince(proposal.created_at, depth=1)


def filter_context(f: inbox_filters.InboxFilter, errors: list[str], *, with_counts: bool = True) -> dict:
    """What the filter bar shows: the choices with their counts (of pending
    proposals matching the other active filters) and the number matching.
    ``with_counts=False`` for "Load more", which shows no filter bar."""
    context: dict = {
        "f": f,
        "f_query": f.query(),
        "filter_errors": errors,
        "sorts": inbox_filters.SORTS,
        "sort_label": inbox_filters.SORTS.get(f.sort, ""),
    }
    if errors or not with_counts:
        return context
    facets = inbox_filters.counts(f)
    context["facets"] = facets
    context["action_chips"] = [
        {"value": value, "label": ProposalAction(value).label, "n": n, "query": f.query(action=value)}
        for value, n in facets["action"]
    ]
    context["all_actions_query"] = f.without("action").query()
    context["active_chips"] = [
        {"label": f"{name}: {getattr(f, name)}", "query": f.query(**{name: ""})}
        for name in ("agent", "kind", "scope", "tag", "q", "file")
        if getattr(f, name)
    ]
    by_action = dict(facets["action"])
    context["all_actions_count"] = sum(by_action.values())
    context["match_count"] = by_action.get(f.action, 0) if f.action else sum(by_action.values())
    return context


@site_login_required
@require_GET
def bulk_all(request):
    """Confirm "accept (or reject) all that match": says how many, and which
    filter; its form posts those ids to the ordinary bulk decision. Accepting
    in bulk leaves out retirements and disputes (accepting one retires a
    record, which is decided one at a time); rejecting includes them (a
    rejection keeps the record). At most BULK_MAX at once, in the inbox's order."""
    f, errors = inbox_filters.parse(request.GET)
    op = request.GET.get("op", "")
    if op not in ("accept", "reject"):
        errors.append(f"op={op[:20]!r} is not one of: accept, reject.")
    context: dict = {**nav_counts(), "nav": "inbox", "f": f, "f_query": f.query(), "op": op, "errors": errors}
    if not errors:
        queryset = inbox_filters.matching(f)
        left_out = 0
        if op == "accept":
            left_out = queryset.filter(action__in=inbox_filters.TARGETED).count()
            queryset = queryset.exclude(action__in=inbox_filters.TARGETED)
        total = queryset.count()
        ids = list(inbox_filters.ordered(f, queryset).values_list("public_id", flat=True)[:BULK_MAX])
        context.update(
            ids=ids,
            total=total,
            capped=total > BULK_MAX,
            left_out=left_out,
            back=reverse("home") + (f"?{f.query()}" if f.query() else ""),
            cap=BULK_MAX,
        )
    template = "reviews/bulk_all.html#confirm" if request.htmx else "reviews/bulk_all.html"
    return render(request, template, context, status=400 if errors else 200)
