"""Records: the reviewer's direct decisions on a record (verify, revise,
retire, clear a dispute, restore the approved text, approve the current
text). Browse, search and one record's page are in record_browse_views; the
worklists are in worklist_views.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.http import Http404
from django.shortcuts import render
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.http import require_http_methods, require_POST

from reviews import actions, validation, vocabulary
from reviews.errors import ValidationFailed, VettedError
from reviews.models import SPACES, Record, RecordStatus

from . import decision_views, viewer
from .page_helpers import (
    approved_form_values,
    back,
    form_changes,
    mark_outside_edits,
    nav_counts,
    pending_disputes,
    site_login_required,
)

# --------------------------------------------------------------------------- decisions on one record


def _record_card(
    request, public_id: str, *, done: str = "", error: str = "", status: int = 200, undo: dict | None = None
):
    record = (
        viewer.records(Record.objects.filter(public_id=public_id))
        .select_related("proposed_by", "superseded_by")
        .prefetch_related(pending_disputes())
        .first()
    )
    mark_outside_edits([record])
    counts = nav_counts()
    return render(
        request,
        "reviews/worklist.html#record-response",
        {
            "r": record,
            "record_id": public_id,
            "done": done,
            "error": error,
            "undo": undo,
            **counts,
            **_worklist(request, counts),
        },
        status=status,
    )


# The worklists whose total is a header count: a decision made there updates
# the page's total and tab title too, so the heading and the badge agree.
_COUNTED_WORKLISTS = {
    "due": ("Due for review", "overdue_count"),
    "disputed": ("Disputed", "disputed_count"),
    "edited": ("Changed outside Vetted", "edited_count"),
}


def _worklist(request, counts: dict) -> dict:
    path = request.htmx.current_url_abs_path if request.htmx else None
    try:
        name = resolve(urlsplit(path).path).url_name if path else None
    except Resolver404:
        return {}
    if name not in _COUNTED_WORKLISTS:
        return {}
    heading, key = _COUNTED_WORKLISTS[name]
    return {"heading": heading, "total": counts[key]}


def _after(
    request, record: Record, done: str, *, event: str = "", before: Record | None = None, card: str = "", land: str = ""
):
    """After a decision on a record: its card (htmx) or back where the reviewer
    was, at the next card (plain POST), with the Undo toast of its ``event``
    (the decision's event type; its subject is ``record``). ``card`` is the
    card's record id when it differs (a revision's card is the old record's),
    ``land`` the page a plain POST goes to when no ``next`` is given."""
    found = decision_views.latest_event(event, record.public_id, request.user) if event else None
    events = [found] if found is not None else []
    if request.htmx:
        undo = decision_views.toast(request, done, events) if events else None
        return _record_card(request, card or record.public_id, done=done, undo=undo)
    decision_views.announce(request, done, events)
    anchor = decision_views.next_record_anchor(request.POST.get("next", ""), before)
    return back(request, land or reverse("record_detail", args=[record.public_id]), anchor=anchor)


def _before(public_id: str) -> Record | None:
    """The record as it is before a decision (where its worklist card stood)."""
    return viewer.records(Record.objects.filter(public_id=public_id)).first()


def _failed(request, public_id: str, exc: VettedError):
    if request.htmx:
        return _record_card(request, public_id, error=exc.message)
    messages.error(request, exc.message)
    return back(request, reverse("record_detail", args=[public_id]))


@site_login_required
@require_POST
def verify(request, public_id):
    before = _before(public_id)
    try:
        record = actions.verify_record(public_id, actor=request.user, review_by=request.POST.get("review_by") or None)
    except VettedError as exc:
        return _failed(request, public_id, exc)
    title = vocabulary.titles([record.title])
    done = f"{vocabulary.DONE['verified']}: {title}; next review by {record.review_by:%Y-%m-%d}."
    return _after(request, record, done, event="record.verified", before=before)


@site_login_required
@require_POST
def retire(request, public_id):
    before = _before(public_id)
    try:
        record = actions.retire_record(public_id, actor=request.user, note=request.POST.get("note", ""))
    except VettedError as exc:
        return _failed(request, public_id, exc)
    done = vocabulary.summary(vocabulary.DONE[vocabulary.RETIRE], [record.title])
    return _after(request, record, done, event="record.retired", before=before)


@site_login_required
@require_POST
def clear(request, public_id):
    """Keep record: its disputes are rejected and it is approved again."""
    before = _before(public_id)
    try:
        record = actions.clear_dispute(public_id, actor=request.user, note=request.POST.get("note", ""))
    except VettedError as exc:
        return _failed(request, public_id, exc)
    done = vocabulary.summary(vocabulary.DONE[vocabulary.KEEP], [record.title])
    if record.edited_since_approval:
        done += " Agents still do not receive it: its text was changed outside Vetted (restore or approve it)."
    return _after(request, record, done, event="record.dispute_cleared", before=before)


@site_login_required
@require_POST
def restore(request, public_id):
    try:
        record = actions.restore_approved_text(public_id, actor=request.user, note=request.POST.get("note", ""))
    except VettedError as exc:
        return _failed(request, public_id, exc)
    return _after(request, record, f"Restored the approved text of {record.public_id}.")


@site_login_required
@require_POST
def approve_current(request, public_id):
    try:
        new = actions.approve_current_text(public_id, actor=request.user, note=request.POST.get("note", ""))
    except VettedError as exc:
        return _failed(request, public_id, exc)
    done = f"Approved the current text of {public_id}: {new.public_id} supersedes it."
    if request.htmx:
        return _record_card(request, public_id, done=done)
    messages.success(request, done)
    return back(request, reverse("record_detail", args=[new.public_id]))


@site_login_required
@require_http_methods(["GET", "POST"])
def revise(request, public_id):
    """Write a corrected version: a new approved record superseding this one."""
    record = viewer.records(Record.objects.filter(public_id=public_id)).first()
    if record is None:
        raise Http404(f"No record with id {public_id!r}.")
    # From the approved text: a record changed outside Vetted shows that change
    # as a diff above the form, never as the text being revised.
    initial = approved_form_values(record)
    if request.method == "GET":
        return _revise_form(request, record, initial, {})
    try:
        new = actions.revise_record(
            public_id, actor=request.user, changes=form_changes(request.POST), note=request.POST.get("note", "")
        )
    except ValidationFailed as exc:
        return _revise_form(
            request, record, {**initial, **request.POST.dict()}, exc.fields, status=200 if request.htmx else 400
        )
    except VettedError as exc:
        return _failed(request, public_id, exc)
    verb = vocabulary.DONE[vocabulary.CORRECT if record.status == RecordStatus.DISPUTED else "revised"]
    done = f"{verb}: {vocabulary.titles([new.title])} ({new.public_id} replaces {record.public_id})."
    return _after(
        request,
        new,
        done,
        event="record.revised",
        before=record,
        card=public_id,
        land=reverse("record_detail", args=[new.public_id]),
    )


def _revise_form(request, record, values, errors, status=200):
    context = {
        "record": record,
        "values": values,
        "errors": errors,
        "kinds": sorted(validation.kinds()),
        "spaces": SPACES,
        "space_locked": True,
        "action_url": reverse("record_revise", args=[record.public_id]),
        "next": request.GET.get("next") or request.POST.get("next", ""),
    }
    if request.htmx:
        return render(request, "reviews/worklist.html#record-revise-form", context, status=status)
    return render(request, "reviews/record_revise.html", {**nav_counts(), **context}, status=status)
