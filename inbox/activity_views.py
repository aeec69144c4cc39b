"""The activity page: pictures of the review work (inbox.activity
collects the figures, inbox.charts draws them as SVG), each chart with
a table of the same numbers beside it."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from . import activity, charts
from .page_helpers import nav_counts, site_login_required


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


@site_login_required
@require_GET
def activity_page(request):
    """Read-only; what the viewer may see (their spaces)."""
    found = activity.collect()
    day_labels = [d.strftime("%d %b") for d in found.days]
    week_labels = [d.strftime("%d %b") for d in found.weeks]
    proposed = [charts.Series(a, [float(v) for v in found.proposed[a]]) for a in found.agents]
    decided = [charts.Series(a, [float(v) for v in found.decided[a]]) for a in found.agents]
    rates = [charts.Series(a, [-1.0 if v is None else v for v in found.rates[a]]) for a in found.agents]
    context = {
        **nav_counts(),
        "nav": "activity",
        "a": found,
        "legend": [(n % charts.SERIES_CLASSES, a) for n, a in enumerate(found.agents)],
        "chart_proposed": charts.stacked_bars(
            "chart-proposed", "Proposals per day by agent, last 30 days", day_labels, proposed
        ),
        "chart_decided": charts.stacked_bars(
            "chart-decided", "Decisions per day by agent, last 30 days", day_labels, decided
        ),
        "chart_rates": charts.lines(
            "chart-rates",
            "Acceptance rate per agent per week, last 12 weeks",
            week_labels,
            rates,
            fmt="{:.0%}",
            top=1.0,
            missing=-1.0,
        ),
        "chart_backlog": charts.lines(
            "chart-backlog",
            "Proposals waiting at the end of each day, last 30 days",
            day_labels,
            [charts.Series("waiting", [float(v) for v in found.backlog])],
        ),
        "chart_ages": charts.bars(
            "chart-ages", "Age of the proposals waiting now", activity.AGE_SHORT, [n for _, n in found.ages]
        ),
        "chart_due": charts.bars(
            "chart-due",
            "Records falling due for review, next 8 weeks",
            [d.strftime("%d %b") for d in found.due_weeks],
            found.due,
        ),
        "chart_took": charts.bars(
            "chart-took",
            "Time to decide, decisions of the last 30 days",
            activity.DECIDE_SHORT,
            [n for _, n in found.decide_times],
        ),
        "day_rows": [
            (day, [n for a in found.agents for n in (found.proposed[a][i], found.decided[a][i])], found.backlog[i])
            for i, day in enumerate(found.days)
        ],
        "rate_rows": [
            (week, [(_percent(found.rates[a][w]), found.rate_counts[a][w]) for a in found.agents])
            for w, week in enumerate(found.weeks)
        ],
        "due_rows": list(zip(found.due_weeks, found.due, strict=True)),
    }
    return render(request, "reviews/activity.html", context)
