from django import template

from reviews.inbox import lookalikes, markdown
from reviews.inbox.worddiff import word_diff

register = template.Library()


@register.filter
def render_markdown(text):
    return markdown.render(text)


@register.simple_tag
def diff(old, new):
    return word_diff(old, new)


@register.simple_tag
def lookalike_warnings(proposal):
    """The look-alike title warnings of a proposal: precomputed for a page of
    cards (lookalikes.annotate, one query), else looked up for this one."""
    found = getattr(proposal, "lookalike_warnings", None)
    if found is None:
        found = lookalikes.warnings_for([proposal]).get(proposal.pk, [])
    return found
