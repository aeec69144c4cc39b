"""Markdown in records and proposals is rendered, and nothing in it can run."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from reviews.inbox.markdown import ALLOWED_TAGS, render
from reviews.inbox.worddiff import word_diff

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![x](javascript:alert(1))",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<iframe src=\"https://evil.example\"></iframe>",
    "<div onclick=\"alert(1)\">x</div>",
    "<svg><script>alert(1)</script></svg>",
    "[x](https://ok.example \"t\" onmouseover=alert(1))",
    "<style>body{display:none}</style>",
    "<form action=https://evil.example><input name=p></form>",
    "```html\n<script>alert(1)</script>\n```",
]


class _Elements(HTMLParser):
    """Every element and attribute the browser would build from the HTML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict]]:
    parser = _Elements()
    parser.feed(html)
    return parser.tags


@pytest.mark.parametrize("body", HOSTILE)
def test_hostile_markdown_cannot_execute(body):
    for tag, attrs in elements(str(render(body))):
        assert tag in ALLOWED_TAGS, f"<{tag}> survived"
        assert not [name for name in attrs if name.startswith("on") or name in ("style", "src", "srcdoc", "action")]
        href = (attrs.get("href") or "").strip().lower()
        assert not href or href.startswith(("http://", "https://", "mailto:")), f"href {href!r} survived"


def test_raw_html_is_shown_as_text():
    assert "&lt;script&gt;" in render("<script>alert(1)</script>")


def test_ordinary_markdown_renders():
    html = str(render("# Title\n\n**bold** and *em* and `code`\n\n- one\n- two\n\n[docs](https://example.com/a?b=1)"))
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html and "<em>em</em>" in html
    assert "<code>code</code>" in html and "<li>one</li>" in html
    assert 'href="https://example.com/a?b=1"' in html and 'rel="noopener noreferrer nofollow"' in html


def test_code_blocks_and_tables_render():
    html = str(render("```\nmake run\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |"))
    assert "<pre><code>make run" in html and "<table>" in html and "<td>1</td>" in html


def test_mailto_links_are_kept():
    assert 'href="mailto:ops@example.com"' in str(render("[mail](mailto:ops@example.com)"))


def test_word_diff_marks_whole_words_and_escapes():
    html = str(word_diff("deploy <b>on</b> monday", "deploy <b>on</b> friday"))
    assert "<del>monday</del>" in html and "<ins>friday</ins>" in html
    assert "&lt;b&gt;on&lt;/b&gt;" in html and "<b>" not in html


def test_word_diff_of_equal_texts_has_no_marks():
    assert "<ins>" not in str(word_diff("same text", "same text"))
