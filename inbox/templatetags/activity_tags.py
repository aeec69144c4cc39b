"""{% activity_strip %}: the few figures above the inbox (templates/reviews/_activity_strip.html)."""

from __future__ import annotations

from django import template

from inbox import activity, charts

register = template.Library()


@register.inclusion_tag("reviews/_activity_strip_body.html")
def activity_strip() -> dict:
    found = activity.strip()
    labels = [str(n) for n in range(len(found.per_day))]
    spark = charts.bars("strip-spark", "Proposals per day, last 14 days", labels, found.per_day)
    return {"s": found, "spark": spark}
