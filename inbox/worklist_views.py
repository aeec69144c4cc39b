"""The worklists: records due for review, disputed, and changed outside Vetted."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from reviews import vocabulary
from reviews.models import Record, RecordStatus

from . import viewer
from .outside_edits import edited_ids
from .page_helpers import (
    burst_note,
    burst_warnings,
    dispute_warnings,
    mark_outside_edits,
    nav_counts,
    pending_disputes,
    site_login_required,
)

LIST_LIMIT = 100


@site_login_required
@require_GET
def due(request):
    """Approved records past their review date: withheld from agents until verified, revised or retired."""
    queryset = viewer.records(Record.objects.overdue()).select_related("proposed_by").order_by("review_by", "id")
    rows = list(queryset[:LIST_LIMIT])
    mark_outside_edits(rows)
    return render(
        request,
        "reviews/worklist.html",
        {
            **nav_counts(),
            "nav": "due",
            "records": rows,
            "total": queryset.count(),
            "heading": "Due for review",
            "explain": (
                "Past their review date, so agents do not receive them. Verify what still holds; "
                "revise or retire the rest."
            ),
        },
    )


@site_login_required
@require_GET
def disputed(request):
    queryset = (
        viewer.records(Record.objects.filter(status=RecordStatus.DISPUTED))
        .select_related("proposed_by")
        .prefetch_related(pending_disputes())
        .order_by("updated_at", "id")
    )
    rows = list(queryset[:LIST_LIMIT])
    mark_outside_edits(rows)
    bursts = burst_warnings()
    warnings = dispute_warnings(bursts)
    for record in rows:
        for d in record.disputes:  # type: ignore[attr-defined]  # a prefetch (to_attr)
            d.dispute_warning = burst_note(bursts, d.agent_id, d.action)  # for the template
    return render(
        request,
        "reviews/worklist.html",
        {
            **nav_counts(),
            "nav": "disputed",
            "records": rows,
            "total": queryset.count(),
            "dispute_warnings": warnings,
            "heading": "Disputed",
            "explain": "An agent said these are wrong; agents do not receive them until you decide: "
            f"{vocabulary.LABELS[vocabulary.KEEP]} if it stands, {vocabulary.LABELS[vocabulary.CORRECT]} "
            f"to write the corrected version, or {vocabulary.LABELS[vocabulary.RETIRE]}.",
        },
    )


@site_login_required
@require_GET
def edited(request):
    """Live records whose text was changed outside Vetted (withheld from agents).
    Found as the header's count is (outside_edits: one read of the live rows,
    the checksum recomputed only for rows that changed since last seen)."""
    ids = edited_ids()
    found = list(
        viewer.records(Record.objects.filter(pk__in=ids[:1000]))
        .select_related("proposed_by")
        .prefetch_related(pending_disputes())
        .order_by("updated_at", "id")
    )
    rows = found[:LIST_LIMIT]
    mark_outside_edits(rows)
    return render(
        request,
        "reviews/worklist.html",
        {
            **nav_counts(),
            "nav": "edited",
            "records": rows,
            "total": len(ids),
            "heading": "Changed outside Vetted",
            "explain": (
                "Their text no longer matches what a person approved, so agents do not receive them. Restore the "
                "approved text, approve the current text (a new approved version), or retire them."
            ),
        },
    )
