"""Small helpers shared by the review pages (inbox, records, agents, settings).

Views stay thin: they read the request, call one function in
reviews.actions, and render or redirect. Nothing here changes state.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch, Q
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

from reviews import actions
from reviews.checksum import CHECKSUM_FIELDS
from reviews.models import Agent, Proposal, ProposalAction, ProposalState, Record, RecordStatus

from . import viewer
from .outside_edits import edited_count

EDITABLE = ("title", "body", "kind", "space", "tags", "review_by")


def nav_counts() -> dict:
    """The numbers in the header and on the inbox: five cheap COUNT queries and the
    changed-outside count (one query over the live rows' text, see outside_edits)."""
    # Spaces: counts of the viewer's spaces only (inbox/viewer.py).
    live = viewer.records(Record.objects.filter(status=RecordStatus.APPROVED))
    return {
        "pending_count": viewer.proposals(Proposal.objects.filter(state=ProposalState.PENDING)).count(),
        "approved_count": live.count(),
        "overdue_count": viewer.records(Record.objects.overdue()).count(),
        "disputed_count": viewer.records(Record.objects.filter(status=RecordStatus.DISPUTED)).count(),
        "agent_count": viewer.agents(Agent.objects.filter(is_active=True).exclude(token_digest=None)).count(),
        # Changed outside Vetted: a checksum per record, remembered per row (outside_edits).
        "edited_count": edited_count(),
        "today": timezone.localdate(),
    }


# An agent that disputes, or proposes to retire, this many records within
# the window (or holds half its cap of open disputes) is named in a warning
# on the inbox and the disputed page: each dispute withholds a record from
# every agent, and a burst of retirements can empty a memory if accepted by habit.
# The numbers live with the actions, which also tell the reviewer of a dispute burst (notify).
DISPUTE_BURST = actions.DISPUTE_BURST
DISPUTE_WINDOW_MINUTES = actions.DISPUTE_WINDOW_MINUTES
_BURST_WORDS = {ProposalAction.DISPUTE: "disputed", ProposalAction.RETIRE: "proposed to retire"}


def burst_warnings() -> dict[tuple[int, str], tuple[str, str]]:
    """Agents disputing or retiring many records at once: (agent pk, action)
    -> (the warning, a one-line note for that agent's cards of that action).
    One grouped query over disputes and retirements that are open or recent;
    no stored state. One rule for both actions (a burst in the window), plus,
    for disputes, holding half the per-agent cap. A burst with nothing left
    open warns of nothing: every one of them is decided."""
    since = timezone.now() - timedelta(minutes=DISPUTE_WINDOW_MINUTES)
    cap = settings.VETTED_OPEN_DISPUTES_PER_AGENT
    rows = (
        Proposal.objects.filter(action__in=list(_BURST_WORDS), agent__isnull=False)
        .filter(Q(state=ProposalState.PENDING) | Q(created_at__gte=since))
        .values("agent_id", "agent__name", "action")
        .annotate(
            recent=Count("pk", filter=Q(created_at__gte=since)), open=Count("pk", filter=Q(state=ProposalState.PENDING))
        )
        .order_by("agent_id", "action")
    )
    warnings: dict[tuple[int, str], tuple[str, str]] = {}
    for row in rows:
        made = _burst_warning(row, cap)
        if made:
            warnings[(row["agent_id"], row["action"])] = made
    return warnings


def dispute_warnings(bursts: dict[tuple[int, str], tuple[str, str]] | None = None) -> dict[int, str]:
    """The burst warnings by agent (agent pk -> its warnings in one text), for
    the summary above the inbox and the disputed page."""
    by_agent: dict[int, str] = {}
    for (agent_id, _action), (text, _note) in (burst_warnings() if bursts is None else bursts).items():
        by_agent[agent_id] = f"{by_agent[agent_id]} {text}" if agent_id in by_agent else text
    return by_agent


def burst_note(bursts: dict[tuple[int, str], tuple[str, str]], agent_id: int | None, action: str) -> str:
    """The note for one card: its own agent's burst of its own action, else nothing."""
    made = bursts.get((agent_id or 0, action))
    return made[1] if made else ""


def _burst_warning(row: Mapping[str, Any], cap: int) -> tuple[str, str] | None:
    burst = row["recent"] >= DISPUTE_BURST
    name = row["agent__name"]
    if not row["open"]:
        return None
    if row["action"] == ProposalAction.RETIRE:
        if not burst:
            return None
        return (
            f"Agent {name} proposed to retire {row['recent']} records in the last {DISPUTE_WINDOW_MINUTES} minutes "
            f"({row['open']} of its retirements are open). Read each before accepting: a retired record "
            "reaches no agent.",
            f"Burst: {name} proposed to retire {row['recent']} in {DISPUTE_WINDOW_MINUTES} min",
        )
    hoarding = bool(cap) and row["open"] >= max(2, (cap + 1) // 2)
    if not (burst or hoarding):
        return None
    held = f"{row['open']} of its disputes are open" + (f" (limit {cap})" if cap else "")
    if burst:
        text = f"Agent {name} disputed {row['recent']} records in the last {DISPUTE_WINDOW_MINUTES} minutes; {held}."
        note = f"Burst: {name} disputed {row['recent']} in {DISPUTE_WINDOW_MINUTES} min"
    else:
        text = f"Agent {name} holds many disputes: {held}."
        note = f"{name} holds {row['open']} open disputes"
    return text + " Each one withholds a record from every agent until you decide.", note


def safe_next(request, default: str) -> str:
    """Where a form came from (``next``), if that is on this site; else ``default``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = default
    return target


def back(request, default: str, *, anchor: str = ""):
    """Redirect a plain form POST to where it came from (``next``), if that is on this site;
    at ``anchor`` (an element id, e.g. the next card) so the reviewer is not sent to the top."""
    target = safe_next(request, default)
    return redirect(f"{target.split('#')[0]}#{anchor}" if anchor else target)


def form_changes(post) -> dict:
    """The content fields of a revise form, as given. Empty review date means
    "the kind's default"; the action works out which fields really changed."""
    changes = {name: post.get(name, "") for name in EDITABLE if name in post}
    if not changes.get("review_by"):
        changes.pop("review_by", None)
    return changes


def tags_text(tags) -> str:
    return ", ".join(tags or [])


def outside_edit(record: Record) -> dict | None:
    """For the banner on a record changed outside Vetted: None if its text
    matches its approval; else ``approved`` (the kept approved content, or
    None when none is kept) and ``fields``, the changed ones as
    {name, old (approved), new (current)} for a word diff."""
    if not record.edited_since_approval:
        return None
    approved = record.approved_text()
    fields = []
    if approved is not None:
        for name in CHECKSUM_FIELDS:
            old, new = approved[name], getattr(record, name)
            if name == "tags":
                old, new = tags_text(sorted(old)), tags_text(sorted(new or []))
            if old != new:
                fields.append({"name": name, "old": old, "new": new})
    return {"approved": approved, "fields": fields}


def mark_outside_edits(records) -> None:
    """Give each record (None skipped) what its cards show: ``outside_edit``
    (see above) and ``shown``, the content a reviewer is shown as the record
    (its approved text when it was changed outside Vetted and a copy is kept:
    diffs and cards never present changed text as the approved record)."""
    for record in records:
        if record is None:
            continue
        record.outside_edit = outside_edit(record)
        record.shown = shown_content(record)


def shown_content(record: Record) -> dict:
    return record.approved_version() or record.checksummed_content()


def approved_form_values(record: Record) -> dict:
    """A revise form's starting values for ``record``: the approved text."""
    mark_outside_edits([record])
    shown = shown_content(record)
    return {
        "title": shown["title"],
        "body": shown["body"],
        "kind": shown["kind"],
        "space": shown["space"],
        "tags": tags_text(shown["tags"]),
        "review_by": "",
    }


def site_login_required(view):
    """login_required, except that an htmx request whose session has ended
    is sent to the login page as a whole page (HX-Redirect) instead of having
    the login form swapped into a card. The site is for reviewers: a signed-in
    account that is not staff (the admin's own test) gets 403, never a page
    or a decision."""
    plain = login_required(view)

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.htmx and not request.user.is_authenticated:
            current = urlsplit(request.headers.get("HX-Current-URL", ""))
            back_to = current.path + (f"?{current.query}" if current.query else "") if current.path else "/"
            response = HttpResponse(status=204)
            response["HX-Redirect"] = f"{reverse('login')}?{urlencode({'next': back_to})}"
            return response
        if request.user.is_authenticated and not (request.user.is_active and request.user.is_staff):
            return HttpResponse(
                f"The account {request.user.get_username()!r} is not a reviewer (staff) account; "
                "ask an administrator to make it one.",
                status=403,
                content_type="text/plain",
            )
        return plain(request, *args, **kwargs)

    return wrapper


def pending_disputes() -> Prefetch:
    """Prefetch of a record's pending disputes (oldest first, with their agent) as ``record.disputes``."""
    return Prefetch(
        "proposals",
        queryset=Proposal.objects.filter(action=ProposalAction.DISPUTE, state=ProposalState.PENDING)
        .select_related("agent")
        .order_by("created_at"),
        to_attr="disputes",
    )
