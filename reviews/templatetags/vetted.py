from django import template

from reviews.inbox import markdown
from reviews.inbox.worddiff import word_diff

register = template.Library()


@register.filter
def render_markdown(text):
    return markdown.render(text)


@register.simple_tag
def diff(old, new):
    return word_diff(old, new)
