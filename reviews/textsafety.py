"""Text a reviewer cannot see, and text that looks like other text.

Two rules live here, used by validation, the duplicate check and the inbox:

* **Invisible characters** (``scan``): control characters other than tab,
  newline and carriage return; every format character (general category Cf:
  zero-width space, joiners, bidi controls, BOM, the TAG block U+E0000-E007F,
  U+061C, interlinear annotation marks, ...); every Default_Ignorable_Code_Point
  (fillers such as U+3164 and U+115F, variation selectors U+FE00-FE0F and
  U+E0100-E01EF, U+180B-180F, U+E0000-E0FFF, ...); lone surrogates and
  noncharacters. Text full of them can carry a whole instruction that the
  reviewer's screen shows as nothing ("ASCII smuggling") while an agent
  reads it. The properties come from the ``regex`` module's Unicode tables,
  which are newer than ``unicodedata``'s (tests/test_text_safety.py pins the
  Default_Ignorable ranges of DerivedCoreProperties.txt against them).

  A few of them are allowed where they are visible in effect:
  - ZWJ (U+200D) between two emoji (the neighbours are Extended_Pictographic,
    an emoji modifier or VS16 before it), so 👩‍💻 and 🏳️‍🌈 work;
  - VS16 (U+FE0F) right after an Extended_Pictographic base, or after a digit,
    # or * that a keycap U+20E3 follows (1️⃣); one at most, so a run of
    variation selectors cannot encode bytes;
  - ZWNJ/ZWJ where IDNA (RFC 5892, CONTEXTJ) allows them: after a virama, and
    ZWNJ between Arabic-script joining letters. Persian, Hindi or Malayalam
    text needs them, and there they change how the letters join;
  - TAG characters only inside the three RGI subdivision flags (England,
    Scotland, Wales: 🏴 + tags + U+E007F). Any other tag sequence is refused,
    well-formed or not: a deliberate trade-off, since tags spell ASCII that
    renders as nothing, which is exactly the smuggling channel.

* **Look-alikes** (``skeleton``, ``content_key``, ``title_key``,
  ``mixed_script_warnings``): the UTS #39 (TR39) skeleton from Unicode's
  confusables.txt (reviews/data/, version 13.0.0, with its licence). To move
  to a newer release, reduce the new file the same way (the first two fields
  of each line) and replace reviews/data/confusables.txt; stored keys then need
  recomputing (see migration 0003_skeleton).
"""

from __future__ import annotations

import hashlib
import html
import json
import unicodedata
from functools import lru_cache
from html.entities import html5
from pathlib import Path

import regex

REMOVE_HINT = "Vetted refuses characters a reviewer cannot see"
LISTED = 3  # characters named in one message; the rest are counted

_REFUSED = regex.compile(
    r"(?V1)[[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}]--[\t\n\r]]")
_BIDI_CONTROL = regex.compile(r"\p{Bidi_Control}")
_DEFAULT_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_PICTOGRAPHIC = regex.compile(r"\p{Extended_Pictographic}")
_EMOJI_MODIFIER = regex.compile(r"\p{Emoji_Modifier}")
ZWNJ, ZWJ, VS16, KEYCAP = "\u200c", "\u200d", "\ufe0f", "\u20e3"
_KEYCAP_BASES = frozenset("0123456789#*")
_TAGS = ("\U000E0000", "\U000E007F")
# England, Scotland, Wales: the only recommended (RGI) tag sequences.
_RGI_SUBDIVISION_FLAG = regex.compile(
    "\U0001F3F4\U000E0067\U000E0062(?:\U000E0065\U000E006E\U000E0067|\U000E0073\U000E0063\U000E0074"
    "|\U000E0077\U000E006C\U000E0073)\U000E007F")
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
        emoji_before = bool(before) and bool(_PICTOGRAPHIC.match(before) or _EMOJI_MODIFIER.match(before)
                                             or (before == VS16 and _vs16_allowed(text, i - 1)))
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
        return text[i + 1:i + 2] == KEYCAP
    return bool(_PICTOGRAPHIC.match(before))


def scan(text: str, keep: int = LISTED) -> tuple[list[tuple[int, str]], int]:
    """The first ``keep`` refused characters of ``text`` as (index, char), and
    how many there are in all. Index 0 is the first character."""
    first: list[tuple[int, str]] = []
    count = 0
    flags: set[int] | None = None
    for match in _REFUSED.finditer(text):
        i, ch = match.start(), match.group()
        if ch in (ZWJ, ZWNJ, VS16) or _TAGS[0] <= ch <= _TAGS[1]:
            if flags is None:
                flags = {j for f in _RGI_SUBDIVISION_FLAG.finditer(text) for j in range(f.start() + 1, f.end())}
            if _allowed_in_context(text, i, ch, flags):
                continue
        count += 1
        if len(first) < keep:
            first.append((i, ch))
    return first, count


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
    return (f"{count:,} invisible or control characters{where} are not allowed: {listed}{more}; "
            f"remove them ({REMOVE_HINT})")


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
            return (f"character reference {match.group()!r} at position {match.start() + 1} stands for "
                    f"{kind_of(bad[0])} {describe(bad[0])}, which is not allowed; remove it ({REMOVE_HINT})")
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
    r"<(script|style|textarea|title)\b[^>]*>.*?</\1\s*>|<!--.*?-->|<[!/?A-Za-z][^>]*>", regex.S | regex.I)


def mark_invisible_html(page: str) -> str:
    """``page`` with every refused character made visible: never as nothing."""
    if not _REFUSED.search(page):
        return page
    out, last = [], 0
    for match in _HTML_PIECES.finditer(page):
        out.append(mark_html_text(page[last:match.start()]))
        out.append(mark_plain(match.group()))
        last = match.end()
    out.append(mark_html_text(page[last:]))
    return "".join(out)


# --------------------------------------------------------------------------- skeletons (UTS #39)


_DATA = Path(__file__).resolve().parent / "data" / "confusables.txt"


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    table: dict[str, str] = {}
    for line in _DATA.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        source, target = (part.strip() for part in line.split(";"))
        table[chr(int(source, 16))] = "".join(chr(int(cp, 16)) for cp in target.split())
    return table


@lru_cache(maxsize=1)
def _look_alikes() -> dict[str, frozenset[str]]:
    """Prototype -> every single character whose skeleton it is (itself included)."""
    groups: dict[str, set[str]] = {}
    for source, target in _prototypes().items():
        groups.setdefault(target, {target} if len(target) == 1 else set()).add(source)
    return {target: frozenset(chars) for target, chars in groups.items()}


def skeleton(text: str) -> str:
    """The TR39 skeleton: NFD, drop default-ignorable (and other refused)
    characters, map each character to its prototype, NFD again."""
    table = _prototypes()
    decomposed = unicodedata.normalize("NFD", text)
    mapped = "".join(table.get(ch, ch) for ch in decomposed if not _REFUSED.match(ch))
    return unicodedata.normalize("NFD", mapped)


def fold(text: str) -> str:
    """What duplicates are compared on: the skeleton of the NFKC form, so
    compatibility variants (fullwidth, mathematical letters), look-alikes
    from other scripts and invisible characters all compare equal. Case is
    kept, as TR39 keeps it: a case difference is visible, and folding case
    first would lose capital look-alikes (Cyrillic "В" is a "B", but its
    lower case "в" is no "b")."""
    return skeleton(unicodedata.normalize("NFKC", text))


def _digest(document: dict) -> str:
    encoded = json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


def content_key(*, kind: str, scope: str, title: str, body: str, tags) -> str:
    """SHA-256 of the content the checksum covers, with title and body
    folded: two texts with the same key look the same to a reviewer."""
    return _digest({"skeleton": 1, "kind": kind, "scope": scope, "title": fold(title), "body": fold(body),
                    "tags": sorted(tags or [])})


def title_key(title: str) -> str:
    return _digest({"skeleton": 1, "title": fold(title)})


# --------------------------------------------------------------------------- scripts


_SCRIPTS = (
    "Latin", "Greek", "Cyrillic", "Armenian", "Georgian", "Cherokee", "Coptic", "Hebrew", "Arabic", "Syriac",
    "Thaana", "Nko", "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu", "Kannada",
    "Malayalam", "Sinhala", "Thai", "Lao", "Tibetan", "Myanmar", "Ethiopic", "Canadian_Aboriginal", "Ogham",
    "Runic", "Khmer", "Mongolian", "Lisu", "Vai", "Bamum", "Tifinagh", "Glagolitic", "Old_Italic", "Gothic",
    "Deseret", "Osage", "Adlam", "Carian", "Lycian", "Lydian", "Warang_Citi", "Yi", "Han", "Hiragana",
    "Katakana", "Bopomofo", "Hangul",
)
_SCRIPT_RE = regex.compile("|".join(rf"(?P<{name}>\p{{sc={name}}})" for name in ("Common", "Inherited", *_SCRIPTS)))
# Scripts written together in one word by honest text (TR39 "highly
# restrictive": Latin with Han and Japanese kana, or with Han and Hangul).
_CJK = frozenset({"Han", "Hiragana", "Katakana", "Bopomofo", "Hangul"})
_WORD = regex.compile(r"[\p{L}\p{M}\p{Nd}]+")


@lru_cache(maxsize=4096)
def script_of(ch: str) -> str | None:
    """The script of a letter (None for Common and Inherited characters)."""
    match = _SCRIPT_RE.match(ch)
    if match is not None:
        return None if match.lastgroup in ("Common", "Inherited") else match.lastgroup.replace("_", " ")
    name = unicodedata.name(ch, "")
    return name.split()[0].title() if name else None


def _family(script: str | None) -> str | None:
    return "CJK" if script in _CJK else script


def _compatible(families: set[str]) -> bool:
    return len(families) <= 1 or families <= {"Latin", "CJK"}


def _has_twin_in(ch: str, family: str, *, ascii_only: bool = False) -> bool:
    """Whether a letter of ``family`` (an ASCII one, if asked) looks like
    ``ch``: the same skeleton."""
    twins = _look_alikes().get(skeleton(ch), frozenset())
    return any(_family(script_of(twin)) == family and (twin.isascii() or not ascii_only)
               for twin in twins if twin != ch)


def letter(ch: str) -> str:
    """``Cyrillic 'а' (U+0430)``, or for a character without a script its name."""
    script = script_of(ch)
    if script is not None and unicodedata.category(ch)[0] == "L":
        return f"{script} '{ch}' (U+{ord(ch):04X})"
    return f"'{ch}' {describe(ch)}"


def mixed_script_warnings(title: str) -> list[str]:
    """Why a title looks like it imitates another script: a word mixing
    scripts (Cyrillic 'а' in a Latin word), or a whole word in another
    script's look-alike letters inside a Latin title (Cyrillic "АРІ" among
    Latin words). Honest single-script text, Latin with CJK, and Latin
    acronyms in a Cyrillic or Greek title give none."""
    warnings: list[str] = []
    words = []
    for match in _WORD.finditer(title):
        word = match.group()
        letters = [(ch, _family(script_of(ch))) for ch in word if script_of(ch) is not None]
        families = {family for _, family in letters}
        words.append((word, letters, families))
        if _compatible(families):
            continue
        counts: dict[str, int] = {}
        for _, family in letters:
            counts[family] = counts.get(family, 0) + 1
        main = max(counts, key=lambda family: (counts[family], family == "Latin"))
        intruders = list(dict.fromkeys(ch for ch, family in letters if family != main and _has_twin_in(ch, main)))
        names = " and ".join(sorted({script_of(ch) for ch, _ in letters}))
        if intruders:
            shown = ", ".join(letter(ch) for ch in intruders[:LISTED])
            warnings.append(f"'{word}' mixes {names} letters: {shown} looks like {main}")
        else:
            warnings.append(f"'{word}' mixes {names} letters in one word")
    # A whole word of look-alikes only counts among mostly Latin words and
    # only when every letter imitates an ASCII one: "API сервер" or a Latin
    # acronym in a Russian title is honest text.
    title_families = [family for _, _, families in words for family in families]
    if title_families.count("Latin") * 2 > len(title_families):
        for word, letters, families in words:
            if len(families) != 1 or "Latin" in families or len(letters) < 3:
                continue
            if all(_has_twin_in(ch, "Latin", ascii_only=True) for ch, _ in letters):
                script = script_of(letters[0][0])
                warnings.append(f"'{word}' is written in {script} letters that look like Latin ones "
                                f"in a Latin title")
    return warnings
