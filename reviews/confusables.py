"""Text that looks like other text: the UTS #39 (TR39) skeleton, the keys
the duplicate check compares, and the mixed-script warnings of the inbox.

The skeleton comes from Unicode's confusables.txt (reviews/data/, version
13.0.0, reduced to its mappings, with its licence). To move to a newer
release, reduce the new file the same way (the first two fields of each
line) and replace reviews/data/confusables.txt; stored keys then need
recomputing (the pass in migration 0004_skeleton).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from functools import lru_cache
from pathlib import Path

import regex

from common.textsafety import BLANKS, LISTED, describe, is_refused

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
    # Blank characters read as a plain space first (textsafety.BLANKS), so a
    # copy with one in place of a space compares equal, refused or not.
    decomposed = "".join(" " if ch in BLANKS else ch for ch in decomposed)
    mapped = "".join(table.get(ch, ch) for ch in decomposed if not is_refused(ch))
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


def content_key(*, kind: str, space: str, title: str, body: str, tags) -> str:
    """SHA-256 of the content the checksum covers, with title and body
    folded: two texts with the same key look the same to a reviewer."""
    return _digest(
        {
            "skeleton": 1,
            "kind": kind,
            "scope": space,
            "title": fold(title),
            "body": fold(body),
            "tags": sorted(tags or []),
        }
    )


def title_key(title: str) -> str:
    return _digest({"skeleton": 1, "title": fold(title)})


# --------------------------------------------------------------------------- scripts


_SCRIPTS = (
    "Latin",
    "Greek",
    "Cyrillic",
    "Armenian",
    "Georgian",
    "Cherokee",
    "Coptic",
    "Hebrew",
    "Arabic",
    "Syriac",
    "Thaana",
    "Nko",
    "Devanagari",
    "Bengali",
    "Gurmukhi",
    "Gujarati",
    "Oriya",
    "Tamil",
    "Telugu",
    "Kannada",
    "Malayalam",
    "Sinhala",
    "Thai",
    "Lao",
    "Tibetan",
    "Myanmar",
    "Ethiopic",
    "Canadian_Aboriginal",
    "Ogham",
    "Runic",
    "Khmer",
    "Mongolian",
    "Lisu",
    "Vai",
    "Bamum",
    "Tifinagh",
    "Glagolitic",
    "Old_Italic",
    "Gothic",
    "Deseret",
    "Osage",
    "Adlam",
    "Carian",
    "Lycian",
    "Lydian",
    "Warang_Citi",
    "Yi",
    "Han",
    "Hiragana",
    "Katakana",
    "Bopomofo",
    "Hangul",
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
        script = match.lastgroup or ""
        return None if script in ("Common", "Inherited") else script.replace("_", " ")
    name = unicodedata.name(ch, "")
    return name.split()[0].title() if name else None


def _family(script: str) -> str:
    return "CJK" if script in _CJK else script


def _compatible(families: set[str]) -> bool:
    return len(families) <= 1 or families <= {"Latin", "CJK"}


def _has_twin_in(ch: str, family: str, *, ascii_only: bool = False) -> bool:
    """Whether a letter of ``family`` (an ASCII one, if asked) looks like
    ``ch``: the same skeleton."""
    twins = _look_alikes().get(skeleton(ch), frozenset())
    return any(
        _family(script_of(twin) or "") == family and (twin.isascii() or not ascii_only) for twin in twins if twin != ch
    )


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
    blanks = list(dict.fromkeys(ch for ch in title if ch in BLANKS))
    if blanks:
        shown = ", ".join(describe(ch) for ch in blanks[:LISTED])
        warnings.append(f"holds {shown}, which shows as a plain space (or nothing) but is another character")
    words = []
    for match in _WORD.finditer(title):
        word = match.group()
        letters = [(ch, _family(script)) for ch in word if (script := script_of(ch)) is not None]
        families = {family for _, family in letters}
        words.append((word, letters, families))
        if _compatible(families):
            continue
        counts: dict[str, int] = {}
        for _, family in letters:
            counts[family] = counts.get(family, 0) + 1
        main = max(counts, key=lambda family: (counts[family], family == "Latin"))
        intruders = list(dict.fromkeys(ch for ch, family in letters if family != main and _has_twin_in(ch, main)))
        names = " and ".join(sorted({script_of(ch) or "" for ch, _ in letters}))
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
                warnings.append(f"'{word}' is written in {script} letters that look like Latin ones in a Latin title")
    return warnings
