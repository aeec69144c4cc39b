"""Markdown in records and proposals is rendered, and nothing in it can run."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from inbox.markdown import ALLOWED_TAGS, render
from inbox.worddiff import word_diff

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
    '<a href="javascript:alert(1)">x</a>',
    '<iframe src="https://evil.example"></iframe>',
    '<div onclick="alert(1)">x</div>',
    "<svg><script>alert(1)</script></svg>",
    '[x](https://ok.example "t" onmouseover=alert(1))',
    "<style>body{display:none}</style>",
    "<form action=https://evil.example><input name=p></form>",
    "```html\n<script>alert(1)</script>\n```",
    '<span class="external">trusted.example</span>',
    '[x](/proposals/prop_0123456789ab/accept "title")',
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
        assert tag != "span" or attrs.get("class") in ("external", "link-target")


def test_raw_html_is_shown_as_text():
    assert "&lt;script&gt;" in render("<script>alert(1)</script>")


def test_ordinary_markdown_renders():
    html = str(render("# Title\n\n**bold** and *em* and `code`\n\n- one\n- two\n\n[docs](https://example.com/a?b=1)"))
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html and "<em>em</em>" in html
    assert "<code>code</code>" in html and "<li>one</li>" in html
    assert 'href="https://example.com/a?b=1"' in html and 'rel="noopener noreferrer nofollow"' in html


def test_code_blocks_and_tables_render():
    html = str(render("```\nmake run\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |"))
    assert "<code>make run" in html and "<td>1</td>" in html
    # They scroll sideways, so a keyboard can focus them, and they have a name.
    assert start_tag(html, "pre") == {"tabindex": "0", "role": "group", "aria-label": "Code block"}
    assert start_tag(html, "table") == {"tabindex": "0", "aria-label": "Table"}


def start_tag(html: str, tag: str) -> dict[str, str]:
    """The attributes of the first <tag> (nh3 writes them in no fixed order)."""
    match = re.search(rf"<{tag}((?: [a-z-]+=\"[^\"]*\")*)>", html)
    assert match, f"no <{tag}> in {html}"
    return dict(re.findall(r' ([a-z-]+)="([^"]*)"', match.group(1)))


def test_an_agent_cannot_set_attributes_on_code_blocks_even_through_the_sanitiser():
    # Raw HTML is text already; this is nh3's layer on its own: our values
    # replace the input's, the rest is dropped.
    import nh3

    from inbox import markdown

    html = nh3.clean(
        '<pre tabindex="-1" aria-label="Approve me" onfocus="x()"><code>y</code></pre>',
        tags=markdown.ALLOWED_TAGS,
        attributes=markdown.ALLOWED_ATTRIBUTES,
        set_tag_attribute_values=markdown.SCROLLABLE_ATTRIBUTES,
    )
    assert start_tag(html, "pre") == {"tabindex": "0", "role": "group", "aria-label": "Code block"}
    assert "x()" not in html and "Approve" not in html


def test_mailto_links_are_kept():
    assert 'href="mailto:ops@example.com"' in str(render("[mail](mailto:ops@example.com)"))


def links(html: str) -> list[str]:
    return [attrs.get("href") or "" for tag, attrs in elements(html) if tag == "a"]


@pytest.mark.parametrize(
    "target",
    [
        "/proposals/prop_0123456789ab/accept",
        "../x",
        "?a=b",
        "#frag",
        "http://127.0.0.1:8765/proposals/prop_0123456789ab/accept",
        "http://localhost/agents/",
        "https:evil.example",
    ],
)
def test_relative_and_same_site_links_are_text_with_their_target_shown(target):
    html = str(render(f"[Accept this]({target})"))
    assert links(html) == []
    assert "Accept this" in html and 'class="link-target"' in html


@pytest.mark.parametrize(
    "markdown, href, host",
    [
        ("[docs](https://example.com/a?b=1#c)", "https://example.com/a?b=1#c", "example.com"),
        ("[x](//elsewhere.example/x)", "https://elsewhere.example/x", "elsewhere.example"),  # another host too
        ("[x][1]\n\n[1]: //elsewhere.example/y", "https://elsewhere.example/y", "elsewhere.example"),
        ("<https://auto.example/x>", "https://auto.example/x", "auto.example"),
        ("[bank](https://bank.example\\@evil.example/)", "https://evil.example/", "evil.example"),
        ("[x](http://user:pw@host.example:8080/p)", "http://host.example:8080/p", "host.example:8080"),
        ("[x](https://b\u00fccher.example/)", "https://xn--bcher-kva.example/", "xn--bcher-kva.example"),
    ],
)
def test_links_to_other_hosts_show_exactly_where_they_go(markdown, href, host):
    html = str(render(markdown))
    assert links(html) == [href]
    assert f'<span class="external" title="Link to another site">{host}</span>' in html
    assert 'rel="noopener noreferrer nofollow"' in html


def test_a_remote_image_is_a_link_never_an_img_so_nothing_is_fetched():
    html = str(render("Look: ![tracking pixel](http://tracker.example/pixel.gif?u=rita)"))
    assert "<img" not in html and [tag for tag, _ in elements(html)].count("img") == 0
    assert links(html) == ["http://tracker.example/pixel.gif?u=rita"]
    assert "image: tracking pixel" in html and ">tracker.example</span>" in html


@pytest.mark.parametrize(
    "markdown",
    ["![diagram](/static/x.png)", "![](//t.example/p.gif)", "[![logo](http://i.example/a.png)](http://l.example/)"],
)
def test_no_image_is_ever_an_img(markdown):
    html = str(render(markdown))
    assert "<img" not in html and "image" in html
    assert len(links(html)) <= 1  # links do not nest


def test_word_diff_marks_whole_words_and_escapes():
    html = str(word_diff("deploy <b>on</b> monday", "deploy <b>on</b> friday"))
    assert "<del>monday</del>" in html and "<ins>friday</ins>" in html
    assert "&lt;b&gt;on&lt;/b&gt;" in html and "<b>" not in html


def test_word_diff_of_equal_texts_has_no_marks():
    assert "<ins>" not in str(word_diff("same text", "same text"))


# --------------------------------------------------------------------------- word diff: bounded work


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size].strip()


def test_word_diff_of_a_repetitive_max_size_revision_stays_within_its_work_budget():
    # The few short words reordered: the worst case for a longest-match diff
    # (it took 20 s before the work was capped).
    from inbox.worddiff import WORK_BUDGET, compute
    from reviews.validation import BODY_MAX

    old, new = _repeat("ab cd ef gh ", 1_000), _repeat("cd ab gh ef ij ", BODY_MAX)
    diff = compute(old, new)
    assert diff.spent <= WORK_BUDGET
    assert diff.whole_blocks == 1
    assert [op for op, _ in diff.pieces if op != "equal"] == ["delete", "insert"]
    html = str(word_diff(old, new))
    assert 'class="diff-note"' in html and "shown removed, then added" in html
    assert html.count("<del>") == 1 and html.count("<ins>") == 1


def test_word_diff_of_a_repetitive_multiline_revision_stays_within_its_work_budget():
    from inbox.worddiff import WORK_BUDGET, compute
    from reviews.validation import BODY_MAX

    diff = compute(_repeat("ab cd\nef gh\n", 1_000), _repeat("ef gh\nab cd\nij kl\n", BODY_MAX))
    assert diff.spent <= WORK_BUDGET and diff.whole_blocks == 1


def test_word_diff_never_spends_more_than_the_budget_it_is_given():
    from inbox.worddiff import compute

    old = " ".join(f"word{i}" for i in range(400))
    new = " ".join(f"word{i}" if i % 7 else f"changed{i}" for i in range(400))
    assert compute(old, new).whole_blocks == 0  # within the normal budget: word by word
    small = compute(old, new, budget_size=500)
    assert small.spent <= 500 and small.whole_blocks == 1


def test_word_diff_keeps_word_marks_for_scattered_edits_in_a_long_body():
    from inbox.worddiff import compute

    paragraphs = [
        " ".join(f"paragraph {p} sentence {s} mentions service-{p}-{s} and its owner." for s in range(8))
        for p in range(40)
    ]
    old = "\n\n".join(paragraphs)
    assert len(old) > 19_000
    edited = list(paragraphs)
    for p in (3, 17, 31):
        edited[p] = edited[p].replace(f"service-{p}-5", f"service-{p}-5b")
    diff = compute(old, "\n\n".join(edited))
    assert diff.whole_blocks == 0
    changes = [(op, text) for op, text in diff.pieces if op != "equal"]
    assert changes == [
        (op, f"service-{p}-5{suffix}") for p in (3, 17, 31) for op, suffix in (("delete", ""), ("insert", "b"))
    ]
