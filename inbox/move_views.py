"""Move a record to another space from its page: the one way
content crosses spaces. The mover must decide in both spaces (the action
checks again); the form offers only the other spaces the viewer decides in,
and only on a record whose space they decide in. A plain form POST, or htmx
(then the answer is an HX-Redirect to where the record now is)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from reviews import actions, policy
from reviews.errors import VettedError
from reviews.models import Record, RecordStatus

from . import viewer
from .page_helpers import site_login_required


def targets(record: Record, person: object) -> list[str]:
    """The spaces the viewer may move ``record`` to, as the permission policy
    answers (none when they do not decide in its space, or where either space
    needs two approvals). Only what to offer: the action asks the policy again."""
    deciding = viewer.deciding() or []
    if record.space not in deciding or record.status != RecordStatus.APPROVED or record.edited_since_approval:
        return []
    return [
        slug
        for slug in deciding
        if slug != record.space and policy.ask(person, "move", [record.space, slug]).outcome == policy.Outcome.ALLOWED
    ]


def _go(request, url: str):
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


@site_login_required
@require_POST
def move(request, public_id):
    try:
        moved = actions.move_record(
            public_id, actor=request.user, space=request.POST.get("space", ""), note=request.POST.get("note", "")
        )
    except VettedError as exc:
        messages.error(request, exc.message)
        return _go(request, reverse("record_detail", args=[public_id]))
    messages.success(request, f"Moved to {moved.space} as {moved.public_id}; the old record is superseded.")
    return _go(request, reverse("record_detail", args=[moved.public_id]))
