"""Reading a query: validation, content words, identifier-looking tokens, and
escaping them for the keyword engine. Engine-neutral, except fts_string,
which quotes for SQLite FTS5 MATCH."""

from __future__ import annotations

import re

from reviews.errors import ValidationFailed

MODES = ("hybrid", "keyword", "semantic")
LIMIT_MAX = 50
QUERY_MAX_CHARS = 2000
TERMS_MAX = 24

_WORD_RE = re.compile(r"[^\W_]+")
# Identifier-looking tokens: CLI flags, and tokens joined by - _ / . : that
# carry a digit, an underscore, a slash, a dot or a colon, or capitals
# (acme/billing-api, 21.0.3, STRIPE_WEBHOOK_SECRET, ACME-1234, --dry-run).
# Lowercase hyphenated words ("one-time", "pre-prod") are ordinary compounds
# in a sentence, but names (acme-money, billing-worker) in a short query.
_IDENT_RE = re.compile(r"(?<![\w-])(?:--?[A-Za-z][\w-]*|[\w@]+(?:[-_/.:][\w@]+)+|[A-Za-z]+\d+\w*|\d+[A-Za-z]+\w*)")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves what's whats we're don't do does use used using get got one also i'm""".split()
)


def _looks_like_identifier(token: str, short_query: bool) -> bool:
    if short_query and "-" in token.strip("-"):
        return True
    if token.startswith("-"):
        return True
    if re.search(r"[\d_/.:@]", token):
        return True
    return sum(1 for ch in token if ch.isupper()) >= 2


def query_terms(query: str) -> list[str]:
    """Lowercase content words, deduplicated, in order; stopwords dropped
    unless nothing else is left."""
    words = [w.lower() for w in _WORD_RE.findall(query)]
    content = [w for w in words if w not in STOPWORDS]
    chosen = content or words
    seen: list[str] = []
    for word in chosen:
        if word not in seen:
            seen.append(word)
    return seen[:TERMS_MAX]


def query_identifiers(query: str) -> list[str]:
    found: list[str] = []
    short_query = len(query.split()) <= 3
    for match in _IDENT_RE.findall(query):
        token = match.strip(".:/")
        if not _looks_like_identifier(token, short_query):
            continue
        if len(token) >= 3 and token.lower() not in (f.lower() for f in found):
            found.append(token)
    return found[:8]


def fts_or_query(terms: list[str]) -> str:
    # Every term is a double-quoted FTS5 string: operators (AND, NEAR, *, -,
    # parentheses, column filters) in user text stay plain text. Terms come
    # from _WORD_RE, so they hold no quote characters.
    return " OR ".join(f'"{term}"' for term in terms)


def fts_string(text: str) -> str:
    """One FTS5 string literal (a phrase): quotes doubled, nothing parsed."""
    return '"' + text.replace('"', '""') + '"'


def contains_identifier(text: str, ident: str) -> bool:
    """``ident`` stands in ``text`` as a whole token: 21.0.3 is not in 21.0.3.1
    or 1.21.0.3, ACME-1234 is not in ACME-12345; a path prefix is fine
    (acme/billing-api in github.com/acme/billing-api)."""
    pattern = r"(?<!\w)(?<!\w[-.])" + re.escape(ident.lower()) + r"(?!\w|[-/.]\w)"
    return re.search(pattern, text.lower()) is not None


def whole_number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def validate(query: object, mode: object, limit: object) -> tuple[str, str, int]:
    """(query, mode, limit) cleaned, or ValidationFailed naming every bad one."""
    errors: dict[str, str] = {}
    # NUL and other control characters carry no meaning in a query.
    clean = re.sub(r"[\x00-\x1f\x7f]", " ", query).strip()[:QUERY_MAX_CHARS] if isinstance(query, str) else ""
    if not clean:
        errors["query"] = "required: the words to search for"
    if not isinstance(mode, str) or mode not in MODES:
        errors["mode"] = f"got {mode!r}; allowed: {', '.join(MODES)}"
    number = whole_number(limit) or 0
    if not 1 <= number <= LIMIT_MAX:
        errors["limit"] = f"got {limit!r}; a whole number from 1 to {LIMIT_MAX}"
    if errors or not isinstance(mode, str):
        raise ValidationFailed(errors)
    return clean, mode, number
