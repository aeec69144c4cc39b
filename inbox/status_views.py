"""Settings and health: the model, the index, the database file, backups."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.db import connection
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from common import __version__
from dbengine import database_engine
from notify import status as notify_status
from retrieval import embeddings, index
from reviews import actions, lockouts
from reviews.errors import VettedError
from reviews.space_models import Membership, Role

from . import viewer
from .page_helpers import nav_counts, site_login_required


@site_login_required
@require_GET
def site_settings(request):
    db, db_size, wal_size = database_engine(connection).sizes(connection)
    loaded = embeddings.loaded_embedder()
    report = index.check()  # read-only: lists problems, fixes nothing
    return render(
        request,
        "reviews/settings.html",
        {
            **nav_counts(),
            "nav": "settings",
            "version": __version__,
            "report": report,
            "index_detail": request.user.is_superuser,  # spaces: counts span every space
            "model_configured": settings.VETTED_MODEL_NAME or settings.VETTED_EMBEDDER,
            "model_loaded": loaded.name if loaded else "",
            "db_path": db,
            "db_size": db_size,
            "wal_size": wal_size,
            "home": settings.VETTED_HOME,
            "kinds": sorted(settings.VETTED_KINDS.items()),
            "lockouts": lockouts.concerning(request.user),  # spaces: own account only
            "lockout_minutes": lockouts.minutes(),
            "lockout_failures": settings.AXES_FAILURE_LIMIT,
            "slowdown_after": settings.VETTED_LOGIN_SLOWDOWN_AFTER,
            "slowdown_seconds": settings.VETTED_LOGIN_SLOWDOWN_SECONDS,
            **notify_status.settings_context(request.user),  # notify: channels, deliveries, feed URL
            "my_spaces": _my_spaces(request.user),  # spaces
        },
    )


def _my_spaces(user) -> list[dict]:
    """The viewer's spaces with their role; members and roles only where they are an owner."""
    rows = []
    for m in Membership.objects.filter(user=user).select_related("space").order_by("space__kind", "space__slug"):
        members = []
        if m.role == Role.OWNER:
            members = list(
                Membership.objects.filter(space=m.space)
                .order_by("user__username")
                .values_list("user__username", "role")
            )
        space = m.space
        rows.append(
            {
                "slug": space.slug,
                "name": space.name,
                "kind": space.kind,
                "required_approvals": space.required_approvals,
                "role": m.role,
                "members": members,
            }
        )
    return rows


@site_login_required
@require_POST
def clear_lockout(request):
    kind, value = request.POST.get("kind", ""), request.POST.get("value", "")
    try:
        removed = actions.clear_login_lockout(
            actor=request.user, **{"username" if kind == "username" else "address": value}
        )
    except VettedError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, f"Cleared the sign-in lockout of {value} ({removed} failed attempt record(s) removed)."
        )
    return redirect("site_settings")


@site_login_required
@require_GET
def quality_page(request):
    """The quality report (read-only: it flags, the reviewer decides)."""
    from retrieval import quality

    # Only the spaces the viewer may read; the index's own
    # problems name ids of every space, so only a superuser gets them in detail.
    readable = viewer.readable() or []
    space = request.GET.get("space", "")
    spaces = [space] if space in readable else readable
    report = quality.run(spaces, full_index_report=request.user.is_superuser)
    groups = [
        (label, [f for f in report.findings if f.kind == kind], report.omitted.get(kind, 0))
        for kind, label in quality.LABELS.items()
    ]
    return render(
        request,
        "reviews/quality.html",
        {
            **nav_counts(),
            "nav": "quality",
            "report": report,
            "groups": [g for g in groups if g[1]],
            "space": space if space in readable else "",
            "spaces": readable,
        },
    )
