"""Records: browse and search (the records page), and one record's page
(its text, history, proposals, why it may be withheld). The decisions on a
record are in record_views.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import Q
from django.db.models.fields.json import KT
from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from retrieval.gate import Reader, withhold_reason
from retrieval.index import IndexModelMismatch
from retrieval.search import MODES, Filters, search
from reviews import actions, validation
from reviews.errors import VettedError
from reviews.models import SPACES, AuditEvent, Proposal, Record, RecordStatus

from . import move_views, viewer
from .page_helpers import (
    mark_outside_edits,
    nav_counts,
    site_login_required,
)

SEARCH_LIMIT = 30
BROWSE_PAGE = 50


def _filters_from(params) -> dict:
    return {name: params.get(name, "").strip() for name in ("q", "mode", "kind", "space", "tag", "status", "agent")}


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
    gate agents use. "As an agent sees it" reads with only the chosen spaces."""
    f = _filters_from(request.GET)
    as_agent = request.GET.get("as_agent") == "1"
    reader_spaces = [s for s in request.GET.getlist("reader_spaces") if s in SPACES] or (
        ["team"] if as_agent else list(SPACES)
    )
    context = {
        **nav_counts(),
        "nav": "records",
        "f": f,
        "as_agent": as_agent,
        "reader_spaces": reader_spaces,
        "kinds": sorted(validation.kinds()),
        "spaces": SPACES,
        "statuses": RecordStatus.values,
        "modes": MODES,
    }
    if f["q"]:
        reader = Reader.for_spaces(reader_spaces) if as_agent else Reader.everything()
        filters = Filters(
            kinds=[f["kind"]] if f["kind"] else [],
            spaces=[f["space"]] if f["space"] else [],
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
        if f["space"]:
            queryset = queryset.filter(space=f["space"])
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
    queryset = Record.objects.filter(match, space__in=reader.spaces).exclude(pk__in=exclude).order_by("-updated_at")
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
    # Spaces: versions in a space the viewer cannot read (a move
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
    # Retired because the decision that approved it was undone: say so, and how often agents read it.
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
