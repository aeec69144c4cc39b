"""After a decision: the Undo toast, the undo itself, where the reviewer lands,
and the Recent decisions page.

Every decision view (inbox cards, bulk, worklists, record page) hands its
decision's AuditEvent(s) to ``announce``: with htmx the toast comes back out
of band into ``#undo-region`` (a polite live region in base.html); without
JavaScript it rides on a flash message (tag ``undo``) and base.html draws it.
The toast's Undo is a plain POST form (key ``u``), so it works without JS too.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.db.models import Q
from django.http import QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from retrieval.search import access_counter
from reviews import actions, space_access, vocabulary
from reviews.errors import VettedError
from reviews.models import AuditEvent, Proposal, ProposalAction, ProposalState, Record, RecordStatus

from . import filters as inbox_filters
from . import viewer
from .page_helpers import back, nav_counts, site_login_required

UNDO_TAG = "undo"
RECENT_LIMIT = 50


# --------------------------------------------------------------------------- words


def proposal_title(p: Proposal) -> str:
    """The title a message names: what was approved (an edited accept may retitle), else what was proposed."""
    made = p.result_record if p.state == ProposalState.ACCEPTED and p.result_record_id else None
    return (made.title if made is not None else "") or p.title or (p.target.title if p.target else p.public_id)


def proposal_done(p: Proposal) -> str:
    """What deciding ``p`` did, in the shared vocabulary ("Kept record", "Accepted", …)."""
    edited = p.action == ProposalAction.DISPUTE and p.result_record_id not in (None, p.target_id)
    return vocabulary.DONE[vocabulary.proposal_outcome(p.action, p.state, edited=edited)]


def latest_event(event_type: str, subject_id: str, user) -> AuditEvent | None:
    """The decision event a record view just wrote (its own, newest)."""
    return (
        AuditEvent.objects.filter(event_type=event_type, subject_id=subject_id, actor=user.get_username())
        .order_by("-id")
        .first()
    )


# --------------------------------------------------------------------------- the toast


def _current_page(request) -> str:
    """Where the reviewer is: the page an htmx request came from, else the request's ``next``."""
    if request.htmx:
        current = urlsplit(request.headers.get("HX-Current-URL", ""))
        if current.path:
            return current.path + (f"?{current.query}" if current.query else "")
    return request.POST.get("next") or request.get_full_path()


def toast(request, text: str, events: list[AuditEvent]) -> dict:
    """The context of reviews/_undo_toast.html for an htmx response."""
    return {"text": text, "events": [e.pk for e in events], "next": _current_page(request), "expires": _expires(events)}


def _expires(events: list[AuditEvent]) -> int:
    """When the Undo button stops working (epoch milliseconds; keys.js hides it then)."""
    first = min((e.at for e in events), default=timezone.now())
    return int((first + timedelta(seconds=settings.VETTED_UNDO_SECONDS)).timestamp() * 1000)


def announce(request, text: str, events: list[AuditEvent]) -> None:
    """For a plain form POST: the decision's message, carrying its Undo (drawn by base.html)."""
    if not events:
        messages.success(request, text)
        return
    ids = ",".join(str(e.pk) for e in events)
    messages.success(request, text, extra_tags=f"{UNDO_TAG} {UNDO_TAG}:{ids}:{_expires(events)}")


def toast_from_message(message, next_url: str) -> dict | None:
    """The toast context of a flash message made by ``announce`` (None for any other)."""
    for tag in str(message.extra_tags or "").split():
        if tag.startswith(f"{UNDO_TAG}:"):
            _, ids, expires = tag.split(":")
            events = [int(i) for i in ids.split(",") if i.isdigit()]
            return {"text": str(message), "events": events, "next": next_url, "expires": int(expires)}
    return None


# --------------------------------------------------------------------------- where the reviewer lands


def next_card_anchor(decided: list[Proposal], next_url: str) -> str:
    """The card after the last of ``decided`` in the inbox the reviewer came
    from (``next_url``: its filters and order, see filters.py), else the last
    card before it: a plain-form decision lands there instead of at the top."""
    if not decided:
        return ""
    f, errors = inbox_filters.parse(QueryDict(urlsplit(next_url).query))
    if errors:
        f, _ = inbox_filters.parse(QueryDict())
    last = inbox_filters.ordered(f, Proposal.objects.filter(pk__in=[p.pk for p in decided])).last()
    rows = inbox_filters.ordered(f, inbox_filters.matching(f)).exclude(pk__in=[p.pk for p in decided])
    found = (inbox_filters.after(f, rows, str(last.pk)).first() if last else None) or rows.last()
    return f"proposal-{found.pk}" if found is not None else ""


def next_record_anchor(next_url: str, before: Record | None) -> str:
    """The worklist card after the one just decided (``before`` is it as it was), for /disputed/ and /due/."""
    if before is None:
        return ""
    path = urlsplit(next_url).path
    if path == reverse("disputed"):
        rows = Record.objects.filter(status=RecordStatus.DISPUTED).exclude(pk=before.pk)
        key = Q(updated_at__gt=before.updated_at) | Q(updated_at=before.updated_at, pk__gt=before.pk)
        found = rows.filter(key).order_by("updated_at", "id").first()
    elif path == reverse("due"):
        rows = Record.objects.overdue().exclude(pk=before.pk)
        key = Q(review_by__gt=before.review_by) | Q(review_by=before.review_by, pk__gt=before.pk)
        found = rows.filter(key).order_by("review_by", "id").first()
    else:
        return ""
    return f"record-{found.pk}" if found is not None else ""


# --------------------------------------------------------------------------- undo and the page


@site_login_required
@require_POST
def undo(request):
    """Undo the decisions named by ``event`` (several for a bulk decision: each
    its own action), then back to where the reviewer was, at the restored card."""
    access_counter.flush()  # so the undo records every read of what it retires
    done, anchor = [], ""
    for raw in request.POST.getlist("event")[:100]:
        try:
            undone = actions.undo_decision(raw, actor=request.user)
        except VettedError as exc:
            messages.error(request, exc.message)
            continue
        done.append(undone.snippet or undone.subject_id)
        if not anchor:
            anchor = _restored_anchor(undone)
    if done:
        messages.success(request, vocabulary.summary("Undone", done))
    elif not request.POST.getlist("event"):
        messages.error(request, "Nothing to undo: the form named no decision.")
    return back(request, reverse("recent_decisions"), anchor=anchor)


def _restored_anchor(undone: AuditEvent) -> str:
    if undone.proposal_ref:
        pk = Proposal.objects.filter(public_id=undone.proposal_ref).values_list("pk", flat=True).first()
        return f"proposal-{pk}" if pk else ""
    restored = list((undone.extra.get("restored") or {}).keys()) or [undone.subject_id]
    pk = Record.objects.filter(public_id=restored[0]).values_list("pk", flat=True).first()
    return f"record-{pk}" if pk else ""


@site_login_required
@require_GET
def recent(request):
    """This reviewer's recent decisions, newest first, with Undo where it is still allowed and why not otherwise."""
    events = list(
        AuditEvent.objects.filter(
            actor_type="user", actor=request.user.get_username(), event_type__in=actions.DECISION_EVENTS
        ).order_by("-id")[:RECENT_LIMIT]
    )
    events = _in_readable_spaces(events)
    undone = actions.undone_events([e.pk for e in events])
    titles = _titles(events)
    proposals = _proposals(events)
    window = timedelta(seconds=settings.VETTED_UNDO_SECONDS)
    now = timezone.now()
    rows = []
    for e in events:
        if e.pk in undone:
            why_not = "Undone."
        elif now - e.at > window:
            why_not = f"Too late: decisions can be undone for {settings.VETTED_UNDO_SECONDS} seconds."
        else:
            why_not = actions.undo_refusal(e, actor=request.user) or ""
        ref = e.proposal_ref or e.record_ref or e.subject_id
        rows.append(
            {
                "event": e,
                "title": titles.get(e.proposal_ref) or titles.get(e.subject_id) or e.snippet or ref,
                "done": vocabulary.DONE[vocabulary.event_outcome(e.event_type, e.extra)],
                "record": e.record_ref or (e.subject_id if e.subject_type == "record" else ""),
                # Who proposed it and the note the reviewer left, so a row says what was decided.
                "agent": proposals[e.proposal_ref].proposer_label if e.proposal_ref in proposals else "",
                "note": _note(e, proposals.get(e.proposal_ref)),
                "why_not": why_not,
            }
        )
    return render(
        request,
        "reviews/decisions.html",
        {
            **nav_counts(),
            "nav": "decisions",
            "rows": rows,
            "window": settings.VETTED_UNDO_SECONDS,
            **_first_approvals(request.user),
        },
    )


def _first_approvals(user) -> dict:
    """Whether the viewer decides in a space that needs two approvals, and how
    many of their first approvals still wait for a second person: those decide
    nothing yet, so the page lists none of them and says where they are."""
    readable = viewer.readable() or []
    rules = space_access.approval_rules()
    if not any(rules.get(slug, 1) >= 2 for slug in readable):
        return {"two_person": False, "first_approvals": 0}
    waiting = Proposal.objects.filter(
        space_access.proposals_in(readable), state=ProposalState.PENDING, approvals__user=user
    ).distinct()
    return {"two_person": True, "first_approvals": waiting.count()}


def _in_readable_spaces(events: list[AuditEvent]) -> list[AuditEvent]:
    """The events about proposals and records the viewer may still read: a
    decision made in a space they have left since shows nothing of it, not
    even its title or snippet."""
    readable = viewer.readable() or []
    proposal_ids = {e.proposal_ref for e in events if e.proposal_ref}
    record_ids = {e.record_ref or e.subject_id for e in events if not e.proposal_ref}
    seen = set(
        Proposal.objects.filter(public_id__in=proposal_ids)
        .filter(space_access.proposals_in(readable))
        .values_list("public_id", flat=True)
    )
    seen |= set(Record.objects.filter(public_id__in=record_ids, space__in=readable).values_list("public_id", flat=True))
    return [e for e in events if (e.proposal_ref or e.record_ref or e.subject_id) in seen]


def _note(event: AuditEvent, proposal: Proposal | None) -> str:
    """The reviewer's note on a proposal's decision: its event's snippet is the
    note, or the title when there was none."""
    if proposal is None or not event.snippet:
        return ""
    titles = {proposal.title, proposal.target.title if proposal.target else ""}
    return "" if event.snippet in titles else event.snippet


def _proposals(events: list[AuditEvent]) -> dict[str, Proposal]:
    ids = {e.proposal_ref for e in events if e.proposal_ref}
    return {p.public_id: p for p in Proposal.objects.select_related("agent", "target").filter(public_id__in=ids)}


def _titles(events: list[AuditEvent]) -> dict[str, str]:
    proposal_ids = {e.proposal_ref for e in events if e.proposal_ref}
    record_ids = {e.subject_id for e in events if e.subject_type == "record"}
    proposals = Proposal.objects.select_related("target").filter(public_id__in=proposal_ids)
    found = {p.public_id: proposal_title(p) for p in proposals}
    found.update(Record.objects.filter(public_id__in=record_ids).values_list("public_id", "title"))
    return found
