"""Records: browse and search, one record, and the reviewer's direct
decisions on a record (verify, revise, retire, clear a dispute, restore the
approved text, approve the current text). The worklists are in worklist_views.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.db.models.fields.json import KT
from django.http import Http404
from django.shortcuts import render
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from retrieval.gate import Reader, withhold_reason
from retrieval.index import IndexModelMismatch
from retrieval.search import MODES, Filters, search
from reviews import actions, validation, vocabulary
from reviews.errors import ValidationFailed, VettedError
from reviews.models import SCOPES, AuditEvent, Proposal, Record, RecordStatus

from . import decision_views, move_views, viewer
from .page_helpers import (
    approved_form_values,
    back,
    form_changes,
    mark_outside_edits,
    nav_counts,
    pending_disputes,
    site_login_required,
)

SEARCH_LIMIT = 30
BROWSE_PAGE = 50


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
        "scopes": SCOPES,
        "scope_locked": True,
        "action_url": reverse("record_revise", args=[record.public_id]),
        "next": request.GET.get("next") or request.POST.get("next", ""),
    }
    if request.htmx:
        return render(request, "reviews/worklist.html#record-revise-form", context, status=status)
    return render(request, "reviews/record_revise.html", {**nav_counts(), **context}, status=status)


# --------------------------------------------------------------------------- browse and search


def _filters_from(params) -> dict:
    return {name: params.get(name, "").strip() for name in ("q", "mode", "kind", "scope", "tag", "status", "agent")}


def _undone_ids():
    """Public ids of the records an undo retired (their decision.undone events name them)."""
    return (
        AuditEvent.objects.filter(event_type=actions.UNDONE_EVENT)
        .filter(extra__has_key="retired")
        .annotate(retired_id=KT("extra__retired"))
        .values("retired_id")
    )


@site_login_required
@require_GET
def records(request):
    """Browse with filters; with a query, search through the same engine and
    gate agents use. "As an agent sees it" reads with only the chosen scopes."""
    f = _filters_from(request.GET)
    as_agent = request.GET.get("as_agent") == "1"
    reader_scopes = [s for s in request.GET.getlist("reader_scopes") if s in SCOPES] or (
        ["team"] if as_agent else list(SCOPES)
    )
    context = {
        **nav_counts(),
        "nav": "records",
        "f": f,
        "as_agent": as_agent,
        "reader_scopes": reader_scopes,
        "kinds": sorted(validation.kinds()),
        "scopes": SCOPES,
        "statuses": RecordStatus.values,
        "modes": MODES,
    }
    if f["q"]:
        reader = Reader.for_scopes(reader_scopes) if as_agent else Reader.everything()
        filters = Filters(
            kinds=[f["kind"]] if f["kind"] else [],
            scopes=[f["scope"]] if f["scope"] else [],
            tags_any=[f["tag"]] if f["tag"] else [],
            agent=f["agent"],
        )
        try:
            # count_access=False: a reviewer looking is not an agent reading.
            response = search(
                f["q"],
                mode=f["mode"] or "hybrid",
                filters=filters,
                limit=SEARCH_LIMIT,
                reader=reader,
                count_access=False,
            )
        except VettedError as exc:
            context["error"] = exc.message
        except IndexModelMismatch as exc:
            context["error"] = f"{exc} (run `python manage.py reindex`)"
        else:
            context["response"] = response
            context["not_delivered"] = _not_delivered(f, reader, exclude={h.record.pk for h in response.results})
    else:
        queryset = viewer.records(Record.objects.select_related("proposed_by")).order_by("-approved_at", "-id")
        if f["kind"]:
            queryset = queryset.filter(kind=f["kind"])
        if f["scope"]:
            queryset = queryset.filter(scope=f["scope"])
        if f["status"]:
            queryset = queryset.filter(status=f["status"])
        else:
            # A record an undo retired is a copy of a decision taken back:
            # listed only when asked for (status "retired").
            queryset = queryset.exclude(status=RecordStatus.RETIRED, public_id__in=_undone_ids())
            context["undone_hidden"] = True
        if f["agent"]:
            queryset = queryset.filter(proposed_by__name=f["agent"])
        if f["tag"]:
            # Tags are a JSON list; tags are restricted to [a-z0-9._/:+-], so
            # the quoted tag is an exact element match in the stored JSON text.
            queryset = queryset.filter(tags__icontains=f'"{f["tag"].lower()}"')
        context["page"] = Paginator(queryset, BROWSE_PAGE).get_page(request.GET.get("page"))
    return render(request, "reviews/records.html", context)


def _not_delivered(f: dict, reader: Reader, exclude: set[int]) -> list[tuple[Record, str]]:
    """Records containing the query's words that the gate would hold back, with
    the gate's reason (search itself reports these only as counts)."""
    words = [w for w in f["q"].split() if len(w) > 2][:6]
    if not words:
        return []
    match = Q()
    for word in words:
        match &= Q(title__icontains=word) | Q(body__icontains=word)
    queryset = Record.objects.filter(match, scope__in=reader.scopes).exclude(pk__in=exclude).order_by("-updated_at")
    if f["status"]:
        queryset = queryset.filter(status=f["status"])
    today = timezone.localdate()
    rows = []
    for record in queryset[:50]:
        reason = withhold_reason(record, today)
        if reason:
            rows.append((record, reason))
        if len(rows) >= 20:
            break
    return rows


@site_login_required
@require_GET
def detail(request, public_id):
    record = (
        viewer.records(Record.objects.filter(public_id=public_id))
        .select_related("proposed_by", "approved_by", "supersedes", "superseded_by")
        .first()
    )
    if record is None:
        raise Http404(f"No record with id {public_id!r}.")
    older, newer = _chain(record)
    # Spaces (issue 16): versions in a space the viewer cannot read (a move
    # crossed spaces) are left out of the chain, titles and all.
    visible = set(
        viewer.records(Record.objects.filter(pk__in=[r.pk for r in older + newer])).values_list("pk", flat=True)
    )
    older, newer = [r for r in older if r.pk in visible], [r for r in newer if r.pk in visible]
    events = AuditEvent.objects.filter(Q(record_ref=record.public_id) | Q(subject_id=record.public_id)).order_by(
        "at", "id"
    )
    proposals = Proposal.objects.filter(Q(target=record) | Q(result_record=record)).select_related(
        "agent", "decided_by"
    )
    mark_outside_edits([record])
    # Retired because the decision that approved it was undone (inbox-decide): say so, and how often agents read it.
    undone = AuditEvent.objects.filter(event_type=actions.UNDONE_EVENT, extra__retired=record.public_id).first()
    return render(
        request,
        "reviews/record_detail.html",
        {
            **nav_counts(),
            "nav": "records",
            "r": record,
            "older": older,
            "newer": newer,
            "events": events[:200],
            "proposals": proposals,
            "withheld": withhold_reason(record),
            "undone": undone,
            "undone_reads": undone.extra.get("reads_before_undo", 0) if undone else 0,
            "checksum_ok": record.outside_edit is None,  # type: ignore[attr-defined]  # set by mark_outside_edits
            "move_targets": move_views.targets(record, request.user),
        },
    )


def _chain(record: Record) -> tuple[list[Record], list[Record]]:
    """The versions before (oldest first) and after this record. Bounded, so a
    corrupted loop cannot hang the page."""
    older: list[Record] = []
    seen = {record.pk}
    current = record
    while current.supersedes_id and current.supersedes_id not in seen and len(seen) < 100:
        current = Record.objects.get(pk=current.supersedes_id)
        seen.add(current.pk)
        older.insert(0, current)
    newer = []
    current = record
    while current.superseded_by_id and current.superseded_by_id not in seen and len(seen) < 200:
        current = Record.objects.get(pk=current.superseded_by_id)
        seen.add(current.pk)
        newer.append(current)
    return older, newer
