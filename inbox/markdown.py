"""Markdown for the review pages, rendered so that nothing in it can run.

Bodies come from agents, which may have copied text from anywhere, so two
layers: markdown-it-py (CommonMark) with raw HTML *off* turns any `<script>`
into visible text, and nh3 (the Ammonia sanitiser) then keeps only a fixed
set of tags and attributes and only http(s)/mailto links. The second layer
is what protects us if a parser option or a plugin ever lets HTML through.
Characters a reviewer cannot see (zero-width, TAG, bidi controls), including
those Markdown decodes from character references, are shown as a marked
⟨U+XXXX⟩ on the finished page by inbox.middleware.VisibleTextMiddleware.

Links and images are rewritten between the two (``_rewrite_links``), because
a link inside this site is a way to trick the reviewer, not to inform them:

- a link to another host (``https://x``, and ``//x``, which is another host
  too) stays a link, rebuilt from its parsed parts so that the host shown
  beside it, in a small "external" label, is exactly where it goes;
- a relative link (``/proposals/…/accept``, ``../x``, ``?a=b``, ``#top``),
  or an absolute one to this site's own hosts (VETTED_ALLOWED_HOSTS), is
  plain text followed by its target: an agent plants nothing to click on
  the reviewer's own site;
- an image is never an ``<img>``: loading it would tell whoever serves it
  that (and when) the reviewer read the proposal. A remote image becomes a
  link "image: ALT" with its host; any other, text (so does one inside a
  link: links do not nest).

nh3 strips any relative URL that would still get through (``url_relative``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

import nh3
from django.conf import settings
from django.http.request import validate_host
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "em",
    "del",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "span",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
# Only the labels added below; an agent cannot write a class (raw HTML is text).
ALLOWED_CLASSES = {"span": {"external", "link-target"}}
# Code blocks and tables scroll sideways (site.css) rather than widen the
# page: a keyboard user must be able to focus them to scroll, and a screen
# reader needs a name for what took the focus. nh3 sets these values on every
# such element, replacing whatever the input had.
SCROLLABLE_ATTRIBUTES = {
    "pre": {"tabindex": "0", "role": "group", "aria-label": "Code block"},
    "table": {"tabindex": "0", "aria-label": "Table"},
}
URL_SCHEMES = {"http", "https", "mailto"}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_RE = re.compile(r"[a-z0-9.-]+|[0-9a-f:.]*:[0-9a-f:.]*")  # a DNS name or IPv4, or an IPv6 literal


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # "commonmark" with html=False: raw HTML blocks and inline tags are text.
    # linkify stays off (it needs an extra package); tables are enabled.
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.core.ruler.push("vetted_links", _rewrite_links)
    return md


def remote_target(url: str) -> tuple[str, str] | None:
    """(canonical URL, host label) for a link to another host over http(s), a
    protocol-relative ``//host/path`` counting as https; None for anything
    else (relative, this site's own hosts, mailto, malformed). The URL is
    rebuilt without user info from the parsed parts, so the label always
    names where it leads."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower() or ("https" if url.startswith("//") else "")
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not parts.netloc or not host:
        return None
    try:
        host = host.encode("idna").decode("ascii")  # a look-alike Unicode host shows as xn--…
    except UnicodeError:
        return None
    shown = f"[{host}]" if ":" in host else host
    if not _HOST_RE.fullmatch(host) or _own_host(shown):
        return None
    if port and port != _DEFAULT_PORTS[scheme]:
        shown += f":{port}"
    canonical = f"{scheme}://{shown}{parts.path or '/'}"
    if parts.query:
        canonical += f"?{parts.query}"
    if parts.fragment:
        canonical += f"#{parts.fragment}"
    return canonical, shown


def _own_host(host: str) -> bool:
    explicit = [allowed for allowed in settings.ALLOWED_HOSTS if allowed != "*"]
    return validate_host(host, explicit)


def _html(markup: str) -> Token:
    token = Token("html_inline", "", 0)
    token.content = markup
    return token


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _label(shown: str) -> Token:
    return _html(f' <span class="external" title="Link to another site">{escape(shown)}</span>')


def _target(url: str) -> Token:
    return _html(f' <span class="link-target">({escape(url)})</span>')


def _rewrite_links(state) -> None:
    """Core rule: classify every link and image (see the module docstring)."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        closers: list[list[Token | None]] = []  # what to emit at each open link's link_close
        for token in block.children:
            if token.type == "link_open":
                href = token.attrGet("href") or ""
                remote = remote_target(href)
                if remote:
                    token.attrSet("href", remote[0])
                    out.append(token)
                    closers.append([None, _label(remote[1])])  # None: keep the link_close itself
                elif href.lower().startswith("mailto:"):
                    out.append(token)
                    closers.append([None])
                else:
                    closers.append([_target(href)])  # the link text stays, as text
            elif token.type == "link_close":
                for piece in closers.pop() if closers else [None]:
                    out.append(token if piece is None else piece)
            elif token.type == "image":
                src = token.attrGet("src") or ""
                alt = token.content.strip()
                remote = None if closers else remote_target(src)
                if remote:
                    link = Token("link_open", "a", 1)
                    link.attrSet("href", remote[0])
                    out += [
                        link,
                        _text(f"image: {alt}" if alt else "image"),
                        Token("link_close", "a", -1),
                        _label(remote[1]),
                    ]
                else:
                    out += [_text(f"[image: {alt}]" if alt else "[image]"), _target(src)]
            else:
                out.append(token)
        block.children = out


def render(text: str) -> SafeString:
    """Markdown -> sanitised HTML, safe to insert into a page."""
    return _render(text or "", tuple(settings.ALLOWED_HOSTS))


# The same bodies are rendered on every inbox page and decision (parse + nh3
# were a fifth of an inbox page of long bodies); the output is a pure function
# of the text and ALLOWED_HOSTS (which links count as remote), both in the key,
# so a bounded cache of recent bodies is exact.
@lru_cache(maxsize=512)
def _render(text: str, _hosts: tuple[str, ...]) -> SafeString:
    html = _parser().render(text)
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        allowed_classes=ALLOWED_CLASSES,
        set_tag_attribute_values=SCROLLABLE_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        url_relative="deny",
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above
