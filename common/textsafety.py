"""Text a reviewer cannot see: the one rule (``scan``), used by validation,
by the look-alike skeleton (reviews/confusables.py) and by every page the
reviewer reads (inbox.middleware.VisibleTextMiddleware).

Refused: control characters other than tab, newline and carriage return;
every format character (general category Cf: zero-width space, joiners,
bidi controls, BOM, the TAG block U+E0000-E007F, U+061C, interlinear
annotation marks, ...); every Default_Ignorable_Code_Point (fillers such as
U+3164 and U+115F, variation selectors U+FE00-FE0F and U+E0100-E01EF,
U+180B-180F, U+E0000-E0FFF, ...); lone surrogates and noncharacters. Text
full of them can carry a whole instruction that the reviewer's screen shows
as nothing ("ASCII smuggling") while an agent reads it. The properties come
from the ``regex`` module's Unicode tables, which are newer than
``unicodedata``'s (tests/test_text_safety.py pins the Default_Ignorable
ranges of DerivedCoreProperties.txt against them).

A few are allowed where they are visible in effect:
- ZWJ (U+200D) between two emoji (the neighbours are Extended_Pictographic,
  an emoji modifier or VS16 before it), so 👩‍💻 and 🏳️‍🌈 work;
- VS16 (U+FE0F) right after an Extended_Pictographic base, or after a digit,
  "#" or "*" that a keycap U+20E3 follows (1️⃣); one at most, so a run of
  variation selectors cannot encode bytes;
- ZWNJ/ZWJ where IDNA (RFC 5892, CONTEXTJ) allows them: after a virama, and
  ZWNJ between Arabic-script joining letters. Persian, Hindi or Malayalam
  text needs them, and there they change how the letters join;
- TAG characters only inside the three RGI subdivision flags (England,
  Scotland, Wales: 🏴 + tags + U+E007F). Any other tag sequence is refused,
  well-formed or not: a deliberate trade-off, since tags spell ASCII that
  renders as nothing, which is exactly the smuggling channel.
"""

from __future__ import annotations

import html
import unicodedata
from html.entities import html5

import regex

REMOVE_HINT = "Vetted refuses characters a reviewer cannot see"
LISTED = 3  # characters named in one message; the rest are counted

# Characters that render as blank but are not Default_Ignorable, decided one
# by one: the one list the refusal, the look-alike key (confusables.fold),
# the title warning (confusables.mixed_script_warnings) and the page marking
# read. "space": shown as a space (a reviewer sees a gap), allowed, and the
# look-alike key reads it as a plain space, as NFKC reads NO-BREAK SPACE, so
# a copy with one in place of a space is a duplicate. "refused": shown as
# nothing recognisable (an empty cell that is no whitespace: strip() and
# the title's space rule keep it), refused like an invisible character.
BLANKS: dict[str, tuple[str, str]] = {
    "\u00a0": ("space", "no-break space: a space that does not wrap"),
    "\u1680": ("space", "Ogham space mark: a space (or a dash) in Ogham text"),
    **{chr(c): ("space", "a typographic space of a set width") for c in range(0x2000, 0x200B)},
    "\u2028": ("space", "line separator: shown as a break or a space"),
    "\u2029": ("space", "paragraph separator: shown as a break or a space"),
    "\u202f": ("space", "narrow no-break space (French punctuation, numbers)"),
    "\u205f": ("space", "medium mathematical space"),
    "\u3000": ("space", "ideographic space (CJK text)"),
    "\u2800": (
        "refused",
        "Braille pattern blank: an empty Braille cell that is no whitespace, so a title of it looks blank "
        "and a word joined by it looks like two; allowed only next to another Braille cell (Braille text)",
    ),
}
# Blank fillers already refused as Default_Ignorable_Code_Point (listed so the
# whole set is in one place; tests/test_text_safety.py checks each is refused).
IGNORABLE_BLANKS = ("\u115f", "\u1160", "\u3164", "\uffa0", "\u180e", "\u034f", "\u17b4", "\u17b5")
BRAILLE_BLANK = "\u2800"
_REFUSED_BLANKS = "".join(ch for ch, (decision, _why) in BLANKS.items() if decision == "refused")

_REFUSED = regex.compile(
    r"(?V1)[[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}"
    + regex.escape(_REFUSED_BLANKS)
    + r"]--[\t\n\r]]"
)
_BIDI_CONTROL = regex.compile(r"\p{Bidi_Control}")
_DEFAULT_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_PICTOGRAPHIC = regex.compile(r"\p{Extended_Pictographic}")
_EMOJI_MODIFIER = regex.compile(r"\p{Emoji_Modifier}")
ZWNJ, ZWJ, VS16, KEYCAP = "\u200c", "\u200d", "\ufe0f", "\u20e3"
_KEYCAP_BASES = frozenset("0123456789#*")
_TAGS = ("\U000e0000", "\U000e007f")
# England, Scotland, Wales: the only recommended (RGI) tag sequences.
_RGI_SUBDIVISION_FLAG = regex.compile(
    "\U0001f3f4\U000e0067\U000e0062(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074"
    "|\U000e0077\U000e006c\U000e0073)\U000e007f"
)
# RFC 5892 Appendix A.1: ZWNJ between a left- or dual-joining letter and a
# right- or dual-joining one, transparent marks allowed on either side.
_ZWNJ_JOINING = regex.compile(r"(?<=[\p{jt=L}\p{jt=D}]\p{jt=T}*)\u200c(?=\p{jt=T}*[\p{jt=R}\p{jt=D}])")
_VIRAMA = 9  # canonical combining class


# --------------------------------------------------------------------------- invisible characters


def _allowed_in_context(text: str, i: int, ch: str, flags: set[int]) -> bool:
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if ch in (ZWJ, ZWNJ) and before and unicodedata.combining(before) == _VIRAMA:
        return True
    if ch == ZWNJ:
        return bool(_ZWNJ_JOINING.match(text, i))
    if ch == ZWJ:
        emoji_before = bool(before) and bool(
            _PICTOGRAPHIC.match(before)
            or _EMOJI_MODIFIER.match(before)
            or (before == VS16 and _vs16_allowed(text, i - 1))
        )
        return emoji_before and bool(after) and bool(_PICTOGRAPHIC.match(after))
    if ch == VS16:
        return _vs16_allowed(text, i)
    if _TAGS[0] <= ch <= _TAGS[1]:
        return i in flags
    return False


def _vs16_allowed(text: str, i: int) -> bool:
    before = text[i - 1] if i > 0 else ""
    if not before:
        return False
    if before in _KEYCAP_BASES:
        return text[i + 1 : i + 2] == KEYCAP
    return bool(_PICTOGRAPHIC.match(before))


def _in_braille(text: str, i: int) -> bool:
    """A blank Braille cell next to a written one: the space of Braille text."""
    return any("\u2801" <= text[j] <= "\u28ff" for j in (i - 1, i + 1) if 0 <= j < len(text))


def scan(text: str, keep: int = LISTED) -> tuple[list[tuple[int, str]], int]:
    """The first ``keep`` refused characters of ``text`` as (index, char), and
    how many there are in all. Index 0 is the first character."""
    first: list[tuple[int, str]] = []
    count = 0
    flags: set[int] | None = None
    for match in _REFUSED.finditer(text):
        i, ch = match.start(), match.group()
        if ch == BRAILLE_BLANK and _in_braille(text, i):
            continue
        if ch in (ZWJ, ZWNJ, VS16) or _TAGS[0] <= ch <= _TAGS[1]:
            if flags is None:
                flags = {j for f in _RGI_SUBDIVISION_FLAG.finditer(text) for j in range(f.start() + 1, f.end())}
            if _allowed_in_context(text, i, ch, flags):
                continue
        count += 1
        if len(first) < keep:
            first.append((i, ch))
    return first, count


def is_refused(ch: str) -> bool:
    """Whether one character is of a refused kind, whatever its context."""
    return bool(_REFUSED.match(ch))


def has_invisible(text: str) -> bool:
    return bool(scan(text, keep=0)[1]) if _REFUSED.search(text) else False


def char_name(ch: str) -> str:
    name = unicodedata.name(ch, "")
    if name:
        return name
    category = unicodedata.category(ch)
    return {"Cc": "<control>", "Cs": "<surrogate>"}.get(category, "<unassigned>")


def describe(ch: str) -> str:
    """``U+200B (ZERO WIDTH SPACE)``."""
    return f"U+{ord(ch):04X} ({char_name(ch)})"


def kind_of(ch: str) -> str:
    if ch in BLANKS:
        return "blank character"
    category = unicodedata.category(ch)
    if category == "Cc":
        return "control character"
    if category == "Cs":
        return "lone surrogate"
    if _BIDI_CONTROL.match(ch):
        return "bidi control character"
    if _DEFAULT_IGNORABLE.match(ch):
        return "invisible character"
    if category == "Cf":
        return "format character"
    return "noncharacter"


def invisible_problem(text: str, *, where: str = "") -> str | None:
    """A message naming the refused characters of ``text`` by code point and
    position (counted from 1), at most ``LISTED`` of them; None if there are
    none. ``where`` says which part of a field, e.g. " in tag 2"."""
    first, count = scan(text)
    if not count:
        return None
    if count == 1:
        i, ch = first[0]
        return f"{kind_of(ch)} {describe(ch)} at position {i + 1}{where} is not allowed; remove it ({REMOVE_HINT})"
    listed = ", ".join(f"{describe(ch)} at position {i + 1}" for i, ch in first)
    more = f", and {count - len(first):,} more" if count > len(first) else ""
    return (
        f"{count:,} invisible or control characters{where} are not allowed: {listed}{more}; remove them ({REMOVE_HINT})"
    )


_CHAR_REFERENCE = regex.compile(r"&(?:#[xX]([0-9a-fA-F]{1,8})|#([0-9]{1,8})|([A-Za-z][A-Za-z0-9]{1,31}));")


def character_reference_problem(text: str) -> str | None:
    """Markdown turns ``&#x200B;`` or ``&ZeroWidthSpace;`` into the character
    itself when it renders: refuse references to characters ``scan`` refuses,
    so the rendered page cannot hide what the raw text does not."""
    for match in _CHAR_REFERENCE.finditer(text):
        hex_digits, digits, name = match.groups()
        if name is not None:
            decoded = html5.get(name + ";", "")
        else:
            number = int(hex_digits, 16) if hex_digits is not None else int(digits)
            decoded = chr(number) if 0 < number <= 0x10FFFF else ""
        bad = [ch for ch in decoded if _REFUSED.match(ch)]
        if bad:
            return (
                f"character reference {match.group()!r} at position {match.start() + 1} stands for "
                f"{kind_of(bad[0])} {describe(bad[0])}, which is not allowed; remove it ({REMOVE_HINT})"
            )
    return None


# --------------------------------------------------------------------------- showing them


def marker(ch: str) -> str:
    return f"\u27e8U+{ord(ch):04X}\u27e9"


def replace_invisible(text: str, render) -> str:
    """``text`` with each refused character replaced by ``render(char)``."""
    first, count = scan(text, keep=len(text))
    if not count:
        return text
    out, last = [], 0
    for i, ch in first:
        out.append(text[last:i])
        out.append(render(ch))
        last = i + 1
    out.append(text[last:])
    return "".join(out)


def mark_plain(text: str) -> str:
    """Each refused character as the text ⟨U+XXXX⟩ (for attributes and form fields)."""
    return replace_invisible(text, marker)


def _span(ch: str) -> str:
    return f'<span class="invisible-char" title="{html.escape(char_name(ch))}">{marker(ch)}</span>'


def mark_html_text(escaped: str) -> str:
    """Each refused character of already-escaped HTML text as a marked span."""
    return replace_invisible(escaped, _span)


# Raw-text and RCDATA elements (a span would show as text there), comments
# and tags: characters in them get the plain marker; text between tags gets
# the span.
_HTML_PIECES = regex.compile(
    r"<(script|style|textarea|title)\b[^>]*>.*?</\1\s*>|<!--.*?-->|<[!/?A-Za-z][^>]*>", regex.S | regex.I
)


# The page check runs on every HTML response, and
# _REFUSED's set operations over Unicode properties cost about 9 ms on a
# 90 KB inbox page. The same answer, cheaply: drop every ASCII character
# _REFUSED does not match (derived from it, so the rule stays in one place)
# from the UTF-8 bytes. Multi-byte sequences are all bytes >= 0x80, so what
# is left decodes to the page's refused ASCII and all its non-ASCII
# characters, a few hundred (·, →, ’, ...), which _REFUSED then scans.
_ORDINARY_ASCII = bytes(c for c in range(128) if not _REFUSED.match(chr(c)))


def _holds_refused(page: str) -> bool:
    """Whether ``page`` holds a character _REFUSED matches (as ``_REFUSED.search``)."""
    rest = page.encode("utf-8", "surrogatepass").translate(None, _ORDINARY_ASCII)
    return bool(rest) and bool(_REFUSED.search(rest.decode("utf-8", "surrogatepass")))


def mark_invisible_html(page: str) -> str:
    """``page`` with every refused character made visible: never as nothing."""
    if not _holds_refused(page):
        return page
    out, last = [], 0
    for match in _HTML_PIECES.finditer(page):
        out.append(mark_html_text(page[last : match.start()]))
        out.append(mark_plain(match.group()))
        last = match.end()
    out.append(mark_html_text(page[last:]))
    return "".join(out)
