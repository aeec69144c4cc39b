"""Markdown for the review pages, rendered so that nothing in it can run.

Bodies come from agents, which may have copied text from anywhere, so two
layers: markdown-it-py (CommonMark) with raw HTML *off* turns any `<script>`
into visible text, and nh3 (the Ammonia sanitiser) then keeps only a fixed
set of tags and attributes and only http(s)/mailto links. The second layer
is what protects us if a parser option or a plugin ever lets HTML through.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
URL_SCHEMES = {"http", "https", "mailto"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # "commonmark" with html=False: raw HTML blocks and inline tags are text.
    # linkify stays off (it needs an extra package); tables are enabled.
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def render(text: str) -> SafeString:
    """Markdown -> sanitised HTML, safe to insert into a page."""
    html = _parser().render(text or "")
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above
