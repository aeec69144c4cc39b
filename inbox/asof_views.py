"""Records "as an agent saw it on DATE": pick a past date (and
optionally a day to judge validity windows on) and an agent or a set of
spaces, and see what such an agent would have received then: the records
listed, or a search, through the same as-of gate agents use (retrieval/asof.py),
each in the text approved at that moment."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from retrieval.asof import list_at
from retrieval.gate import Reader
from retrieval.index import IndexModelMismatch
from retrieval.search import MODES, search
from reviews import history
from reviews.errors import ValidationFailed, VettedError
from reviews.models import Agent

from . import viewer
from .page_helpers import nav_counts, site_login_required

SHOWN = 50


@site_login_required
@require_GET
def as_seen(request):
    params = {name: request.GET.get(name, "").strip() for name in ("as_of", "valid_at", "agent", "q", "mode")}
    # Spaces: only agents the viewer is shown and spaces they read;
    # another person's agent is the same error as an unknown name, and a
    # chosen agent reads here only its grants the viewer may read (so the
    # withheld counts are of readable spaces only).
    readable = viewer.readable() or []
    agents = list(viewer.agents(Agent.objects.order_by("name")))
    chosen = next((a for a in agents if a.name == params["agent"]), None)
    picked = chosen.spaces if chosen else request.GET.getlist("spaces")
    spaces = [s for s in picked if s in readable]
    context = {
        **nav_counts(),
        "nav": "records",
        "p": params,
        "agents": agents,
        "chosen": chosen,
        "spaces": readable,
        "reader_spaces": spaces,
        "modes": MODES,
    }
    if not params["as_of"] and not params["valid_at"]:
        return render(request, "reviews/records_as_of.html", context)
    errors: dict[str, str] = {}
    moment = None
    try:
        moment = history.clean_moment(params["as_of"], params["valid_at"])
    except ValidationFailed as exc:
        errors.update(exc.fields)
    if params["agent"] and chosen is None:
        errors["agent"] = f"no agent named {params['agent'][:40]!r}; pick one from the list"
    if not spaces:
        errors["spaces"] = "pick an agent or at least one space"
    if errors or moment is None:
        context["errors"] = errors
        return render(request, "reviews/records_as_of.html", context, status=400)
    reader = Reader.for_spaces(spaces)
    context["moment"] = moment
    if params["q"]:
        try:
            # count_access=False: a reviewer looking back is not an agent reading.
            context["response"] = search(
                params["q"], mode=params["mode"] or "hybrid", reader=reader, moment=moment, limit=30, count_access=False
            )
        except VettedError as exc:
            context["errors"] = {"q": exc.message}
        except IndexModelMismatch as exc:
            context["errors"] = {"q": f"{exc} (run `python manage.py reindex`)"}
    else:
        context["listed"] = list_at(reader, moment, spaces=spaces, kinds=[], tags_all=[], limit=SHOWN)
    return render(request, "reviews/records_as_of.html", context)
