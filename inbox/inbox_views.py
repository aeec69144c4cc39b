"""The review inbox: pending proposals (disputes first, then oldest; see
filters.py for the filters and sorts), decided in place.

Every POST works with and without htmx: with the HX-Request header the
changed card comes back as a partial (plus the header count, out of band);
without it the browser is redirected back with a message.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviews import actions, validation, vocabulary
from reviews.errors import NotFound, ValidationFailed, VettedError
from reviews.models import SPACES, Proposal, ProposalAction, ProposalState

from . import decision_views, lookalikes, triage_views, viewer
from . import filters as inbox_filters
from .page_helpers import (
    approved_form_values,
    back,
    burst_note,
    burst_warnings,
    dispute_warnings,
    form_changes,
    mark_outside_edits,
    nav_counts,
    site_login_required,
    tags_text,
)

PAGE_SIZE = 25
BULK_MAX = triage_views.BULK_MAX


def _page(f: inbox_filters.InboxFilter, after: str) -> tuple[list[Proposal], str]:
    """One page of pending proposals matching ``f`` after the cursor (a
    proposal's pk), in ``f``'s order, and the next cursor. A cursor rather
    than an offset: deciding cards must not shift the next page."""
    queryset = inbox_filters.after(f, inbox_filters.ordered(f, inbox_filters.matching(f)), after)
    rows = list(queryset[: PAGE_SIZE + 1])
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    mark_outside_edits(p.target for p in rows)
    for p in rows:
        p.age = triage_views.age(p)  # type: ignore[attr-defined]  # for the compact line
    return rows, (str(rows[-1].pk) if more and rows else "")


@site_login_required
@require_GET
def inbox(request):
    f, errors = inbox_filters.parse(request.GET)
    view, view_error = triage_views.chosen_view(request)
    if view_error:
        errors.append(view_error)
    expand, after = request.GET.get("expand", ""), request.GET.get("after", "")
    more = bool(request.htmx and after)
    context = {
        "nav": "inbox",
        "view": view,
        "expand": int(expand) if expand.isdigit() else 0,
        # smalls: a line's no-JS link (?expand=) keeps the page it is on, or a
        # line past the first page would open nothing (the first page lacks it).
        "page_after": after if after.isdigit() else "",
        # Kept open after a change made in it (htmx names the form that sent the request).
        "filters_open": request.headers.get("HX-Trigger") == "triage-filters",
        **triage_views.filter_context(f, errors, with_counts=not more),
    }
    if errors:
        # Never a list that silently means something else: the errors, the
        # filter bar to fix them, and no cards (nor "select all").
        context.update(proposals=[], next_cursor="", dispute_warnings={})
        # 400 for a plain request; htmx swaps only 2xx answers, so it gets 200 (the page says what is wrong).
        status = 200 if request.htmx else 400
        return render(request, "reviews/inbox.html", {**nav_counts(), **context}, status=status)
    proposals, next_cursor = _page(f, after)
    bursts = burst_warnings()
    warnings = dispute_warnings(bursts)
    for p in proposals:
        # Only its own agent's burst of its own kind: a retirement burst is no news on a dispute card.
        p.dispute_warning = burst_note(bursts, p.agent_id, p.action)  # type: ignore[attr-defined]  # for the card
    lookalikes.annotate(proposals)
    context.update(proposals=proposals, next_cursor=next_cursor, dispute_warnings=warnings)
    if more:
        # "Load more": only the next cards and the new button.
        return render(request, "reviews/inbox.html#page", context)
    response = render(request, "reviews/inbox.html", {**nav_counts(), **context})
    if request.htmx:
        # The filter form sends every field, empty or not: push the short, canonical address.
        response["HX-Push-Url"] = reverse("home") + (f"?{f.query()}" if f.query() else "")
    return response


def card_response(request, proposal_id: str, *, error: str = "", status: int = 200, undo: dict | None = None):
    proposal = (
        viewer.proposals(Proposal.objects.select_related("agent", "target", "decided_by", "result_record"))
        .filter(public_id=proposal_id)
        .first()
    )
    if proposal is not None:
        mark_outside_edits([proposal.target])
    context = {"p": proposal, "proposal_id": proposal_id, "error": error, "undo": undo, **nav_counts()}
    context.update(_page_counts(request))
    return render(request, "reviews/inbox.html#card-response", context, status=status)


def _page_counts(request) -> dict:
    """After an in-place decision: the counts of the inbox page it was made on
    (its filter chips and "N pending"), for out-of-band swaps, so they never
    disagree with the header. Nothing when the page was not the inbox."""
    current = request.htmx.current_url_abs_path if request.htmx else ""
    if not current:
        return {}
    parts = urlsplit(current)
    if parts.path != reverse("home"):
        return {}
    f, errors = inbox_filters.parse(QueryDict(parts.query))
    if errors:
        return {}
    return {"triage_oob": True, **triage_views.filter_context(f, [])}


def _decided(request, proposal: Proposal):
    """After one decision: the decided card (htmx) or back to the next card
    (plain POST), with the Undo toast; named by title in the shared vocabulary."""
    if proposal.state == ProposalState.PENDING:
        # A first approval of two: no decision yet, so no
        # Undo; the card shows "1 of 2 approvals".
        text = f"Your approval of {decision_views.proposal_title(proposal)} is counted; it needs another reviewer."
        if request.htmx:
            return card_response(request, proposal.public_id)
        messages.success(request, text)
        return back(request, reverse("home"), anchor=f"proposal-{proposal.pk}")
    text = vocabulary.summary(decision_views.proposal_done(proposal), [decision_views.proposal_title(proposal)])
    events = [actions.decision_event(proposal)]
    if request.htmx:
        return card_response(request, proposal.public_id, undo=decision_views.toast(request, text, events))
    decision_views.announce(request, text, events)
    anchor = decision_views.next_card_anchor([proposal], request.POST.get("next", ""))
    return back(request, reverse("home"), anchor=anchor)


def failed_response(request, proposal_id: str, exc: VettedError):
    if request.htmx:
        return card_response(request, proposal_id, error=exc.message)
    messages.error(request, exc.message)
    return back(request, reverse("home"))


@site_login_required
@require_POST
def accept(request, public_id):
    if not request.htmx:
        # Without JavaScript a card's hints are a link the reviewer may not have
        # opened, and a compact line shows no flags at all: the flags are computed
        # here, and a flagged proposal waits for the confirm that names them (its
        # form is the bulk decision's, with the proposal in ``flagged_ok``). With
        # JavaScript the card or line shows its flags and holds Accept until they come.
        held = triage_views.unconfirmed_flags(request, [public_id])
        if held is not None:
            return held
    try:
        proposal = actions.accept_proposal(public_id, actor=request.user, note=request.POST.get("note", ""))
    except VettedError as exc:
        return failed_response(request, public_id, exc)
    return _decided(request, proposal)


@site_login_required
@require_POST
def reject(request, public_id):
    try:
        proposal = actions.reject_proposal(public_id, actor=request.user, note=request.POST.get("note", ""))
    except VettedError as exc:
        return failed_response(request, public_id, exc)
    return _decided(request, proposal)


def _form_initial(proposal: Proposal) -> dict:
    """What the revise form starts from: the proposed text, or for a dispute
    the disputed record's approved text (accepting a dispute with changes
    corrects it; text changed outside Vetted is shown as a diff, never as the base)."""
    if proposal.action == ProposalAction.DISPUTE and proposal.target is not None:  # a dispute has a target
        return approved_form_values(proposal.target)
    return {
        "title": proposal.title,
        "body": proposal.body,
        "kind": proposal.kind,
        "space": proposal.space,
        "tags": tags_text(proposal.tags),
        "review_by": proposal.review_by.isoformat() if proposal.review_by else "",
    }


@site_login_required
@require_http_methods(["GET", "POST"])
def revise(request, public_id):
    """Edit a proposal's text, then accept the edited version
    (accept_proposal_with_revision keeps both the proposed and the approved text)."""
    proposal = viewer.proposals(Proposal.objects.select_related("agent", "target").filter(public_id=public_id)).first()
    if proposal is None:
        return failed_response(request, public_id, NotFound(f"No proposal with id {public_id!r}."))
    if request.method == "GET":
        if proposal.state != ProposalState.PENDING or proposal.action == ProposalAction.RETIRE:
            return card_response(request, public_id) if request.htmx else back(request, reverse("home"))
        return _revise_form(request, proposal, _form_initial(proposal), {})
    changes = form_changes(request.POST)
    try:
        decided = actions.accept_proposal_with_revision(
            public_id, actor=request.user, changes=changes, note=request.POST.get("note", "")
        )
    except ValidationFailed as exc:
        return _revise_form(
            request,
            proposal,
            {**_form_initial(proposal), **request.POST.dict()},
            exc.fields,
            status=200 if request.htmx else 400,
        )
    except VettedError as exc:
        return failed_response(request, public_id, exc)
    return _decided(request, decided)


def _revise_form(request, proposal, values: dict, errors: dict, status: int = 200):
    mark_outside_edits([proposal.target])
    context = {
        "p": proposal,
        "values": values,
        "errors": errors,
        "kinds": _kinds(),
        "spaces": SPACES,
        "space_locked": proposal.target_id is not None,
        "action_url": reverse("proposal_revise", args=[proposal.public_id]),
    }
    if request.htmx:
        return render(request, "reviews/inbox.html#revise-form", context, status=status)
    return render(request, "reviews/proposal_revise.html", {**nav_counts(), **context}, status=status)


def _kinds() -> list[str]:
    return sorted(validation.kinds())


@site_login_required
@require_POST
def bulk(request):
    """Accept or reject several proposals; each is its own action (and
    transaction), so one that fails does not undo the others."""
    ids = request.POST.getlist("ids")[:BULK_MAX]
    op = request.POST.get("op")
    note = request.POST.get("note", "")
    if op not in ("accept", "reject") or not ids:
        messages.error(request, "Select one or more proposals, then Accept or Reject.")
        return back(request, reverse("home"))
    if op == "accept":
        # Computed here, on every bulk accept, so no client (a checkbox bar whose
        # hints had not loaded, a script, a stale confirm) can skip the flags: a
        # flagged proposal is accepted only if the form names it in ``flagged_ok``,
        # which only the confirm listing it offers.
        held = triage_views.unconfirmed_flags(request, ids)
        if held is not None:
            return held
    do = actions.accept_proposal if op == "accept" else actions.reject_proposal
    done: list[Proposal] = []
    failed = []
    for public_id in ids:
        try:
            done.append(do(public_id, actor=request.user, note=note))
        except VettedError as exc:
            failed.append(exc.message)
    # A first approval of two decides nothing yet: it is
    # said so, with no Undo (as for one accept, in _decided).
    counted = [p for p in done if p.state == ProposalState.PENDING]
    decided = [p for p in done if p.state != ProposalState.PENDING]
    if counted:
        names = ", ".join(decision_views.proposal_title(p) for p in counted)
        messages.success(request, f"Your approval is counted for {len(counted)}, each needs another reviewer: {names}.")
    if decided:
        # Named by title and by what happened (a dispute accepted retires its
        # record); one Undo for all of them (each undone as its own action).
        by_outcome: dict[str, list[str]] = {}
        for p in decided:
            by_outcome.setdefault(decision_views.proposal_done(p), []).append(decision_views.proposal_title(p))
        text = " ".join(vocabulary.summary(verb, names) for verb, names in by_outcome.items())
        decision_views.announce(request, text, [actions.decision_event(p) for p in decided])
    for message in failed:
        messages.error(request, message)
    anchor = decision_views.next_card_anchor(done, request.POST.get("next", ""))
    return back(request, reverse("home"), anchor=anchor)


@site_login_required
@require_GET
def card(request, public_id):
    """One proposal's card: the inbox's Cancel after Revise…, and a compact
    line opened in place. Nothing was decided, so no counts come with it (their
    out-of-band targets are not on every page that shows a card)."""
    proposal = (
        viewer.proposals(Proposal.objects.select_related("agent", "target", "decided_by", "result_record"))
        .filter(public_id=public_id)
        .first()
    )
    if not request.htmx:
        anchor = f"#proposal-{proposal.pk}" if proposal else ""
        return redirect(reverse("home") + anchor)
    if proposal is not None:
        mark_outside_edits([proposal.target])
    return render(request, "reviews/inbox.html#card", {"p": proposal, "proposal_id": public_id})
