"""How two texts about the same thing may contradict each other: the rule the
quality check and the inbox's hints share (retrieval.quality re-exports it).

Two texts close in meaning contradict when one detail takes the place of
another in the same setting: "every Tuesday" / "every Thursday", "by Stripe" /
"by Adyen", "TLS 1.2" / "TLS 1.3", "enabled by default" / "disabled by
default", or when one says "not" about what the other states. A detail counts
only where it stands in the same place in both texts, which is what a reader
checks: a word before or after it is the same in both. That is what keeps a
paraphrase (which reorders its words, so "PRs" and "URL" meet no shared
neighbour) from being flagged.

Two texts can also be alike because they say the same kind of thing about
two different subjects ("Acme pays within 30 days" / "Globex pays within 45
days"; "the public API" / "the partner API"). When the subject itself is
replaced (a different word at the start of the text, absent from the other
one) and something else differs too, or the titles name the two subjects,
they are about different things and are not flagged. Such a pair is also
never offered as a duplicate (``compare(...).different_subject``).

Measured on tests/data/quality_pairs.jsonl by ``manage.py quality --eval``
(docs/reviewer-hints.md has the figures and how the rules were tuned).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
# Words of one closed set where one in the place of another changes the fact.
FREQUENCIES = frozenset("hourly daily nightly weekly fortnightly biweekly monthly quarterly yearly annually".split())
ENVIRONMENTS = frozenset("staging production prod development dev test testing qa sandbox preview".split())
# Words that negate what follows them. "without", "deprecated" or "avoid" are
# not here: they are how a paraphrase says the same thing in other words
# ("deploys are avoided on Fridays" = "we do not deploy on Fridays").
NEGATORS = frozenset(
    """not no never cannot can't don't doesn't didn't isn't aren't wasn't weren't won't wouldn't
shouldn't mustn't nobody none nothing neither nor""".split()
)
# A text holding any of these already says something negative: "only one of
# them is negated" needs the other text to hold none.
NEGATIVE = NEGATORS | frozenset(
    """without avoid avoids avoided stop stops stopped refuse refused refuses forbid forbids forbidden prohibit
prohibited disallow disallowed deprecated unsupported disabled rather instead dislike dislikes phased dropped""".split()
)
# Words whose swap for the other of the pair reverses a statement.
_OPPOSITES = [
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("on", "off"),
    ("allowed", "forbidden"),
    ("allowed", "prohibited"),
    ("allowed", "disallowed"),
    ("allow", "forbid"),
    ("required", "optional"),
    ("mandatory", "optional"),
    ("supported", "unsupported"),
    ("supported", "deprecated"),
    ("public", "private"),
    ("automatically", "manually"),
    ("automatic", "manual"),
    ("synchronous", "asynchronous"),
    ("sync", "async"),
    ("always", "never"),
    ("include", "exclude"),
    ("included", "excluded"),
    ("encrypted", "unencrypted"),
    ("increase", "decrease"),
    ("accepted", "rejected"),
]
OPPOSITES = {frozenset(pair) for pair in _OPPOSITES}
_OPPOSITE_WORDS = frozenset(w for pair in _OPPOSITES for w in pair)
_NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split(),
    )
}
# Function words: never a subject, a name, or the word a negation is about.
STOPWORDS = frozenset(
    """a an the our their its his her my your we you they it this that these those there here all every each
any some of in on at to for from by with and or but as is are was were be been being do does did has have had
will would should must may can could shall so if when then than into onto over under after before per via
who what which where how why while about only also just even ever yet still get gets""".split()
)
_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w'’.:/@+-]*[\w%+]|[A-Za-z0-9%]")
_VERSION_RE = re.compile(r"^v?\d+(?:\.\d+){1,3}$")
_HAS_DIGIT = re.compile(r"\d")
_SENTENCE_END = re.compile(r"[.!?;:]\s|\n")
# The subject of a text stands in its first few words.
SUBJECT_SPAN = 4


@dataclass(frozen=True)
class Token:
    raw: str  # as written (case kept: a name is capitalised)
    low: str  # compared form: lower case, possessive dropped, number words as digits
    start: bool  # first word of a sentence (a capital there says nothing)


@dataclass(frozen=True)
class Text:
    """One text parsed once (a record meets up to NEIGHBOURS others)."""

    title: tuple[Token, ...]
    body: tuple[Token, ...]
    words: frozenset[str]  # every compared form, title and body
    lower: str
    negative: bool  # holds any NEGATIVE word

    @property
    def tokens(self) -> tuple[Token, ...]:
        return self.title + self.body


@dataclass
class Comparison:
    reasons: list[str] = field(default_factory=list)
    # The texts say alike things about two different subjects (never a duplicate).
    different_subject: bool = False
    subject: tuple[str, str] | None = None


def _normal(raw: str) -> str:
    low = raw.lower().replace("’", "'")
    if low.endswith("'s"):
        low = low[:-2]
    low = low.rstrip("'")
    return _NUMBER_WORDS.get(low, low)


def _tokens(text: str) -> tuple[Token, ...]:
    out: list[Token] = []
    last_end = 0
    for m in _TOKEN_RE.finditer(text):
        gap = text[last_end : m.start()]
        start = not out or bool(_SENTENCE_END.search(gap + " ")) or "\n" in gap
        out.append(Token(m.group(0), _normal(m.group(0)), start))
        last_end = m.end()
    return tuple(out)


def parse(text: str) -> Text:
    title, _, body = text.partition("\n")
    if not body:
        title, body = "", title
    t_title, t_body = _tokens(title), _tokens(body)
    words = frozenset(t.low for t in t_title + t_body)
    return Text(
        title=t_title,
        body=t_body,
        words=words,
        lower=text.lower(),
        negative=bool(words & NEGATIVE),
    )


def _kind(token: Token) -> str:
    if _HAS_DIGIT.search(token.low):
        return "versions" if _VERSION_RE.match(token.low) else "numbers"
    if token.low in WEEKDAYS:
        return "weekdays"
    if token.low in FREQUENCIES:
        return "frequencies"
    if token.low in ENVIRONMENTS:
        return "environments"
    if token.low in MONTHS and token.raw[0].isupper():
        return "months"
    if token.low in _OPPOSITE_WORDS:
        return "opposite"
    if token.low in STOPWORDS or token.low in NEGATIVE:
        return "stop"
    raw = token.raw
    capital = raw[0].isupper() and not token.start
    inner_capital = any(c.isupper() for c in raw[1:])
    identifier = any(c in raw for c in "-_/.@") and len(raw) > 2
    if capital or inner_capital or identifier:
        return "names"
    if raw[0].isupper():  # a capitalised first word: a name or an ordinary word, the pairing decides
        return "capital"
    return "word"


def _neighbours(tokens: tuple[Token, ...], i: int) -> tuple[str | None, str | None]:
    before = tokens[i - 1].low if i > 0 and not tokens[i].start else None
    after = tokens[i + 1].low if i + 1 < len(tokens) and not tokens[i + 1].start else None
    return before, after


def _content_neighbours(tokens: tuple[Token, ...], i: int) -> tuple[str | None, str | None]:
    """The nearest words either side that are not function words, within the sentence."""
    before = after = None
    k = i
    while k > 0 and not tokens[k].start:
        k -= 1
        if tokens[k].low not in STOPWORDS:
            before = tokens[k].low
            break
    k = i + 1
    while k < len(tokens) and not tokens[k].start:
        if tokens[k].low not in STOPWORDS:
            after = tokens[k].low
            break
        k += 1
    return before, after


def _aligned(a: tuple[Token, ...], i: int, b: tuple[Token, ...], j: int) -> bool:
    """The two words stand in the same place: the word before, or the word
    after, is the same in both (next to each other, or past function words:
    "persistence is enabled" / "persistence disabled")."""
    for side_a, side_b in (
        (_neighbours(a, i), _neighbours(b, j)),
        (_content_neighbours(a, i), _content_neighbours(b, j)),
    ):
        if any(x is not None and x == y for x, y in zip(side_a, side_b, strict=True)):
            return True
    return False


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _same_stem(x: str, y: str) -> bool:
    sx, sy = _stem(x), _stem(y)
    short, long = sorted((sx, sy), key=len)
    return len(short) >= 3 and long.startswith(short)


def _substitutions(a: Text, b: Text) -> list[tuple[str, Token, int, Token, int]]:
    """(kind, token of a, its body position, token of b, its body position):
    aligned pairs of different words where at least one of the two is absent
    from the other text (so a reordering of the same details is no pair)."""
    found = []
    seen = set()
    for i, x in enumerate(a.body):
        kx = _kind(x)
        if kx == "stop":
            continue
        for j, y in enumerate(b.body):
            if x.low == y.low or (x.low in b.words and y.low in a.words):
                continue
            ky = _kind(y)
            # A name or word that occurs in both texts was moved, not replaced ("the Jira
            # ticket" / "the URL of the Jira ticket"); a number may recur ("TLS 1.3;
            # 1.2 was switched off").
            if {kx, ky} - {"numbers", "versions"} and (x.low in b.words or y.low in a.words):
                continue
            if ky == "stop" or not _aligned(a.body, i, b.body, j):
                continue
            kinds = {kx, ky}
            if frozenset((x.low, y.low)) in OPPOSITES:
                kind = "opposites"
            elif kinds <= {"numbers", "versions"}:
                kind = "versions" if "versions" in kinds else "numbers"
            elif kx == ky and kx in ("weekdays", "months", "frequencies", "environments"):
                kind = kx
            elif kinds <= {"names", "capital"} and "names" in kinds or kinds == {"capital"}:
                kind = "names"
            elif kinds <= {"word", "capital", "names"}:
                if _same_stem(x.low, y.low):
                    continue
                kind = "word"
            else:
                continue
            key = (kind, x.low, y.low)
            if key not in seen:
                seen.add(key)
                found.append((kind, x, i, y, j))
    return found


def _negation(a: Text, b: Text) -> str:
    """The negator of ``a`` and the statement it negates that ``b`` makes
    without any negative word, or ""."""
    if b.negative:
        return ""
    for i, token in enumerate(a.body):
        if token.low not in NEGATORS:
            continue
        following = [t.low for t in a.body[i + 1 : i + 6] if t.low not in STOPWORDS and t.low not in NEGATIVE][:2]
        for word in following:
            if any(_same_stem(word, other) for other in b.words if other not in STOPWORDS):
                return f"'{token.low}'"
    return ""


def _title_subjects(a: Text, b: Text) -> tuple[str, str] | None:
    """The titles are one phrase with one part replaced ("Acme invoice terms"
    / "Globex invoice terms"), and neither replacement occurs in the other text."""
    ta, tb = [t.low for t in a.title], [t.low for t in b.title]
    if not ta or not tb:
        return None
    ops = [op for op in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 == len(ta) or j2 - j1 == len(tb):  # nothing in common: two titles, not one phrase
        return None
    old, new = ta[i1:i2], tb[j1:j2]
    if len(old) > 2 or len(new) > 2:
        return None
    if any(w in b.words or w in STOPWORDS for w in old) or any(w in a.words or w in STOPWORDS for w in new):
        return None
    if any(_same_stem(x, y) for x in old for y in new):
        return None
    # A subject is what the text is about, so its body names it first.
    for words, text in ((old, a), (new, b)):
        if not all(any(t.low == w for t in text.body[:SUBJECT_SPAN]) for w in words):
            return None
    return " ".join(old), " ".join(new)


def compare(a: str | Text, b: str | Text) -> Comparison:
    """What differs between two texts (title on the first line, then the body)
    in a way that changes what they say; see the module docstring."""
    pa = a if isinstance(a, Text) else parse(a)
    pb = b if isinstance(b, Text) else parse(b)
    subs = _substitutions(pa, pb)
    details = [s for s in subs if s[0] != "word"]
    reasons: list[str] = []
    negated = _negation(pa, pb) or _negation(pb, pa)
    if negated:
        reasons.append(f"only one of them is negated ({negated})")
    for label in ("numbers", "versions", "weekdays", "months", "frequencies", "environments", "names", "opposites"):
        pairs = [(x.low, y.low) for kind, x, _, y, _ in details if kind == label]
        if pairs:
            only_a = sorted({x for x, _ in pairs})[:3]
            only_b = sorted({y for _, y in pairs})[:3]
            word = "opposite words" if label == "opposites" else f"different {label}"
            reasons.append(f"{word}: {', '.join(only_a)} vs {', '.join(only_b)}")
    subject = next(
        (
            (x.low, y.low)
            for kind, x, i, y, j in subs
            if kind in ("word", "names", "environments") and i < SUBJECT_SPAN and j < SUBJECT_SPAN
        ),
        None,
    )
    titled = _title_subjects(pa, pb)
    subject = subject or titled
    if subject is not None and reasons:
        # The subject's own replacement is not "something else" (Mei / Tom writes the notes).
        others = [
            r
            for r in reasons
            if not (r.startswith(("different names:", "different environments:")) and len(details) == 1)
        ]
        if titled is not None or others:
            return Comparison(reasons=[], different_subject=True, subject=subject)
    return Comparison(reasons=reasons, different_subject=titled is not None, subject=subject)


def differences(a: str | Text, b: str | Text) -> list[str]:
    """Ways two texts about the same thing differ that change what they say."""
    return compare(a, b).reasons
