"""``{% live_inbox %}``: the live inbox's poller, for templates/reviews/inbox.html."""

from django import template

from notify import live

register = template.Library()


@register.inclusion_tag("notify/_live_inbox.html", takes_context=True)
def live_inbox(context):
    return {
        "after": live.newest_pending(getattr(context.get("request"), "user", None)),
        "poll_seconds": live.POLL_SECONDS,
        "new": 0,
        "request": context.get("request"),
    }
