"""Triage on the inbox: the filter bar's context, the reviewer's view
(cards or the compact list) and "select all that match" (a confirm that
posts the matching ids to the ordinary bulk decision, so every proposal is
still its own action and transaction).
"""

from __future__ import annotations

from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.utils.timesince import timesince
from django.views.decorators.http import require_GET, require_POST

from reviews.models import InboxView, Proposal, ProposalAction, ProposalState

from . import filters as inbox_filters
from . import hints, viewer
from .page_helpers import back, nav_counts, safe_next, site_login_required

# The ordinary bulk decision takes at most this many ids (inbox_views.BULK_MAX
# imports it from here, so the cap lives once).
BULK_MAX = 100


# The list/cards choice is per device (a phone and a desktop want different
# views), so it lives in a cookie that only a POST sets: a GET never writes.
VIEW_COOKIE = "vetted_inbox_view"
VIEW_COOKIE_AGE = 365 * 24 * 3600


def device_view(request) -> str:
    """The view this device chose (the cookie), cards until it chooses."""
    stored = request.COOKIES.get(VIEW_COOKIE, "")
    return stored if stored in InboxView.values else InboxView.CARDS


def chosen_view(request) -> tuple[str, str]:
    """The inbox view for this response and an error: ``?view=`` shows that
    view for this one page (a link or bookmark may ask for it) and stores
    nothing; without it, this device's choice."""
    asked = (request.GET.get("view") or "").strip()
    if not asked:
        return device_view(request), ""
    if asked not in InboxView.values:
        allowed = ", ".join(InboxView.values)
        return device_view(request), f"view={asked[:20]!r} is not one of: {allowed}."
    return asked, ""


@site_login_required
@require_POST
def choose_view(request):
    """Remember the inbox view on this device (a cookie) and go back."""
    view = request.POST.get("view", "")
    if view not in InboxView.values:
        allowed = ", ".join(InboxView.values)
        return HttpResponseBadRequest(
            f"view={view[:20]!r} is not one of: {allowed}.", content_type="text/plain; charset=utf-8"
        )
    response = back(request, reverse("home"))
    response.set_cookie(
        VIEW_COOKIE, view, max_age=VIEW_COOKIE_AGE, samesite="Lax", httponly=True, secure=request.is_secure()
    )
    return response


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
        for name in ("agent", "kind", "space", "tag", "q", "file")
        if getattr(f, name)
    ]
    by_action = dict(facets["action"])
    context["all_actions_count"] = sum(by_action.values())
    context["match_count"] = by_action.get(f.action, 0) if f.action else sum(by_action.values())
    return context


def flag_context(ids: list[str], flagged: dict[str, list[str]]) -> dict:
    """What the accept confirm shows of ``flagged`` (hints.flags_of): each
    flagged proposal with its flags, the ids without one, and a count per flag."""
    titles = dict(Proposal.objects.filter(public_id__in=list(flagged)).values_list("public_id", "title"))
    return {
        "flagged": [{"id": i, "title": titles.get(i, ""), "flags": flagged[i]} for i in ids if i in flagged],
        "clear_ids": [i for i in ids if i not in flagged],
        "flag_counts": {
            key: sum(1 for found in flagged.values() if name in found)
            for key, name in (
                ("contradiction", "contradiction"),
                ("duplicate", "duplicate"),
                ("same_record", "same record"),
                ("unavailable", "hints unavailable"),
            )
        },
    }


def unconfirmed_flags(request, ids: list[str]):
    """None if a bulk accept of ``ids`` may go ahead: none carries a flag, or
    the form names each flagged one in ``flagged_ok`` (only a confirm that
    listed it offers that). Otherwise nothing is decided and the answer is the
    accept confirm for exactly these ids, with "Accept only the others"."""
    # Only proposals the viewer decides in: another space's proposal is not
    # looked at nor named here (its accept is refused as unknown, as ever).
    # A proposal already decided is left to its action's own answer.
    pending = Proposal.objects.filter(public_id__in=ids, state=ProposalState.PENDING)
    visible = list(viewer.proposals(pending).values_list("public_id", flat=True))
    flagged = hints.flags_of(visible)
    confirmed = set(request.POST.getlist("flagged_ok"))
    if all(i in confirmed for i in flagged):
        return None
    context: dict = {
        **nav_counts(),
        "nav": "inbox",
        "op": "accept",
        "errors": [],
        "ids": ids,
        "total": len(ids),
        "held": True,
        "back": safe_next(request, reverse("home")),
        "cap": BULK_MAX,
        **flag_context(ids, flagged),
    }
    return render(request, "reviews/bulk_all.html", context)


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
        # Accepting is what a possible contradiction or duplicate makes wrong: say how many carry
        # one, name them, and offer to accept only the others.
        context.update(flag_context(ids, hints.flags_of(ids) if op == "accept" else {}))
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
