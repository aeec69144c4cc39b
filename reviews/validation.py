"""Write discipline: what a proposal's fields must look like.

Every function here either returns the normalised value or raises
ValidationFailed with a message that says what was wrong and what is allowed.
``clean_content`` checks all fields and reports every problem at once.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from common import textsafety

from .errors import ValidationFailed
from .space_access import space_slugs

TITLE_MAX = 200
TITLE_MIN = 3
BODY_MIN = 20
BODY_MAX = 20_000
REASON_MIN = 5
REASON_MAX = 2_000
NOTE_MAX = 2_000
TAGS_MAX = 20
TAG_MAX_LEN = 50
METADATA_MAX_BYTES = 8_192
SESSION_MAX = 128
SOURCE_TOOL_MAX = 64
REVIEW_BY_MAX_DAYS = 3650

_TAG_RE = re.compile(r"^[a-z0-9][a-z0-9._/:+-]*$")
_WORD_RE = re.compile(r"[^\W\d_]{2,}")


def _refuse_invisible(field: str, value: str, *, where: str = "") -> None:
    """The one rule for every field an agent or a reviewer writes: no
    character the reviewer cannot see (controls, bidi controls, zero-width
    and other format characters, TAG characters, fillers, variation
    selectors; see common/textsafety.py for the exact set and the emoji
    exceptions). Text that renders differently from what is stored, or not at
    all, could carry what no reviewer approved ("Trojan Source", "ASCII
    smuggling"). Checked on the value as sent, so positions match it; callers
    check lengths first, which bounds the work."""
    problem = textsafety.invisible_problem(value, where=where)
    if problem:
        raise ValidationFailed({field: problem})


def kinds() -> dict[str, int]:
    return dict(settings.VETTED_KINDS)


def normalise_text(value: str) -> str:
    return unicodedata.normalize("NFC", value.replace("\r\n", "\n").replace("\r", "\n"))


def clean_kind(value: object) -> str:
    allowed = kinds()
    kind = str(value or "").strip().lower()
    if kind not in allowed:
        shown = repr(value) if value else "nothing"
        raise ValidationFailed({"kind": f"got {shown}; allowed kinds: {', '.join(sorted(allowed))}"})
    return kind


def clean_space(value: object, held: Iterable[str] | None = None) -> str:
    """A space's slug (the ``space`` field holds it). The refusal never lists
    every space there is (that would name other people's personal spaces and
    teams the caller is not in): only ``held``, the spaces the caller holds,
    when the caller passes them; and an unknown slug reads like one the
    caller does not hold."""
    space = str(value or "").strip().lower()
    allowed = None if held is None else list(held)
    if space not in space_slugs() or (allowed is not None and space not in allowed):
        raise ValidationFailed({"space": unknown_space_message(value, allowed)})
    return space


def unknown_space_message(value: object, held: Iterable[str] | None) -> str:
    """The one wording for a space the caller may not use (unknown or not theirs alike)."""
    shown = repr(str(value)[:40]) if value else "nothing"
    if held is None:
        return f"got {shown}; not a space you may use (give the slug of a space you hold)"
    mine = list(held)
    return f"got {shown}; your spaces: {', '.join(mine) if mine else 'none'}"


def clean_title(value: object) -> str:
    if not isinstance(value, str):
        raise ValidationFailed({"title": "required, a single line of text"})
    title = normalise_text(value).strip()
    if "\n" in title:
        raise ValidationFailed({"title": "must be a single line"})
    title = re.sub(r"\s+", " ", title)
    if len(title) < TITLE_MIN:
        raise ValidationFailed({"title": f"must be at least {TITLE_MIN} characters"})
    if len(title) > TITLE_MAX:
        raise ValidationFailed({"title": f"is {len(title)} characters; at most {TITLE_MAX} allowed"})
    _refuse_invisible("title", value)
    return title


def clean_body(value: object) -> str:
    if not isinstance(value, str):
        raise ValidationFailed({"body": "required, Markdown text"})
    body = normalise_text(value).strip()
    # Trailing spaces carry no meaning in Markdown except as hard breaks; strip
    # them so the same note pasted twice gets the same checksum.
    body = "\n".join(line.rstrip() for line in body.split("\n"))
    if len(body) < BODY_MIN:
        raise ValidationFailed({"body": f"is {len(body)} characters; at least {BODY_MIN} required"})
    if len(body) > BODY_MAX:
        raise ValidationFailed({"body": f"is {len(body)} characters; at most {BODY_MAX} allowed"})
    _refuse_invisible("body", value)
    reference = textsafety.character_reference_problem(body)
    if reference:
        raise ValidationFailed({"body": reference})
    problem = junk_reason(body)
    if problem:
        raise ValidationFailed({"body": f"does not look like real text: {problem}"})
    return body


def junk_reason(text: str) -> str | None:
    """Why ``text`` looks like junk rather than something worth remembering, or None.

    Deliberately lenient with code and commands (procedures are full of
    symbols); it catches keyboard mashing, filler and repeated characters.
    """
    compact = re.sub(r"\s+", "", text)
    if not compact:
        return "it is empty"
    top_char, top_count = Counter(compact).most_common(1)[0]
    if len(compact) >= 20 and top_count / len(compact) > 0.5:
        return f"more than half of it is the character {top_char!r}"
    words = [w.lower() for w in _WORD_RE.findall(text)]
    if len(words) < 3:
        return "it needs at least three words"
    if len(set(words)) < 3:
        return "it repeats the same one or two words"
    letters = sum(1 for ch in compact if ch.isalpha())
    if letters / len(compact) < 0.25:
        return "less than a quarter of it is letters"
    # Words without vowels (in scripts that have them) are a sign of mashing:
    # "asdfgh qwrtzp" - but keep short ones (ids, units, "ls", "npm").
    long_words = [w for w in words if len(w) >= 5 and w.isascii()]
    if len(long_words) >= 4:
        vowelless = sum(1 for w in long_words if not re.search(r"[aeiouy]", w))
        if vowelless / len(long_words) > 0.5:
            return "most of its words have no vowels"
    return None


def clean_tags(value: object) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = [part for part in re.split(r"[,\s]+", value) if part]
    if not isinstance(value, (list, tuple)):
        raise ValidationFailed({"tags": "must be a list of strings"})
    if len(value) > TAGS_MAX * 5:
        raise ValidationFailed({"tags": f"{len(value)} given; at most {TAGS_MAX} allowed"})
    tags: list[str] = []
    for number, raw in enumerate(value, 1):
        if not isinstance(raw, str):
            raise ValidationFailed({"tags": f"{raw!r} is not a string"})
        tag = re.sub(r"\s+", "-", normalise_text(raw).strip().lower()).lstrip("#")
        if not tag:
            continue
        if len(tag) > TAG_MAX_LEN:
            raise ValidationFailed({"tags": f"{tag[:20]!r}… is longer than {TAG_MAX_LEN} characters"})
        _refuse_invisible("tags", raw, where=f" in tag {number}")
        if not _TAG_RE.match(tag):
            raise ValidationFailed(
                {
                    "tags": f"{tag!r} is not allowed; use lowercase letters, digits and . _ / : + - "
                    "(starting with a letter or digit)"
                }
            )
        if tag not in tags:
            tags.append(tag)
    if len(tags) > TAGS_MAX:
        raise ValidationFailed({"tags": f"{len(tags)} distinct tags; at most {TAGS_MAX} allowed"})
    return sorted(tags)


def clean_date(field: str, value: object) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValidationFailed({field: f"{value!r} is not a date; use YYYY-MM-DD"})


# Moments an agent may give (e.g. `since`): far enough from datetime's own
# limits (years 1-9999) that converting any offset to UTC cannot overflow.
MOMENT_MIN = datetime(1970, 1, 1, tzinfo=UTC)
MOMENT_MAX = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
_MOMENT_MAX_LEN = 64


def clean_moment(field: str, value: object) -> datetime | None:
    """An ISO 8601 date (midnight in TIME_ZONE) or date-time, as an aware UTC
    datetime between MOMENT_MIN and MOMENT_MAX; None for nothing. Anything
    else, including dates whose offset would push them past datetime's
    range, raises ValidationFailed naming the field."""
    if value is None or value == "":
        return None
    parsed = None
    if isinstance(value, str) and len(value) <= _MOMENT_MAX_LEN:
        text = value.strip()
        try:
            parsed = parse_datetime(text)
            if parsed is None:
                day = parse_date(text)
                parsed = datetime(day.year, day.month, day.day) if day else None
            if parsed is not None:
                if timezone.is_naive(parsed):
                    parsed = timezone.make_aware(parsed)
                parsed = parsed.astimezone(UTC)
        except (ValueError, OverflowError):
            parsed = None  # 2026-02-30, an offset of 24 h or more, or past year 9999 / before year 1 in UTC
    if parsed is not None and MOMENT_MIN <= parsed <= MOMENT_MAX:
        return parsed
    shown = str(value)[:40]
    raise ValidationFailed(
        {
            field: f"got {shown!r}; a date (2026-11-30) or an ISO 8601 date-time "
            f"(2026-11-30T09:00:00Z) between {MOMENT_MIN:%Y-%m-%d} and {MOMENT_MAX:%Y-%m-%d}"
        }
    )


def default_review_by(kind: str, today: date | None = None) -> date:
    today = today or timezone.localdate()
    return today + timedelta(days=kinds()[kind])


def clean_review_by(value: object, kind: str) -> date:
    review_by = clean_date("review_by", value)
    today = timezone.localdate()
    if review_by is None:
        return default_review_by(kind, today)
    if review_by <= today:
        raise ValidationFailed({"review_by": f"{review_by} is not in the future; give a date after {today}"})
    if review_by > today + timedelta(days=REVIEW_BY_MAX_DAYS):
        raise ValidationFailed({"review_by": f"{review_by} is more than {REVIEW_BY_MAX_DAYS} days away"})
    return review_by


def clean_reason(value: object, *, field: str = "reason") -> str:
    if not isinstance(value, str) or len(value.strip()) < REASON_MIN:
        raise ValidationFailed({field: f"required: at least {REASON_MIN} characters saying why"})
    reason = normalise_text(value).strip()
    if len(reason) > REASON_MAX:
        raise ValidationFailed({field: f"is {len(reason)} characters; at most {REASON_MAX} allowed"})
    _refuse_invisible(field, value)
    return reason


def clean_note(value: str | None, *, required: bool = False) -> str:
    note = normalise_text(value or "").strip()
    if required and not note:
        raise ValidationFailed({"note": "required: say why"})
    if len(note) > NOTE_MAX:
        raise ValidationFailed({"note": f"is {len(note)} characters; at most {NOTE_MAX} allowed"})
    _refuse_invisible("note", value or "")
    return note


def clean_confidence(value: Any) -> float | None:  # anything float() takes, or None / ""
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationFailed({"confidence": f"{value!r} is not a number between 0 and 1"}) from None
    if not 0.0 <= number <= 1.0:
        raise ValidationFailed({"confidence": f"{number} is outside 0..1"})
    return number


def clean_metadata(value: object) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed({"metadata": "must be a JSON object"})
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationFailed({"metadata": f"is not plain JSON: {exc}"}) from None
    except RecursionError:
        raise ValidationFailed({"metadata": "is nested too deeply"}) from None
    if len(encoded.encode("utf-8", "surrogatepass")) > METADATA_MAX_BYTES:
        raise ValidationFailed({"metadata": f"is larger than {METADATA_MAX_BYTES} bytes as JSON"})
    # Every key and string value, however deep (walked without recursion).
    pending: list[tuple[str, object]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                _refuse_invisible("metadata", key, where=f" in a key of metadata{path}")
                pending.append((f"{path}[{key!r}]", child))
        elif isinstance(item, list):
            pending.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
        elif isinstance(item, str):
            _refuse_invisible("metadata", item, where=f" in metadata{path}")
    return value


def clean_short(field: str, value: object, limit: int) -> str:
    text = str(value or "").strip()
    if "\n" in text or "\r" in text:
        raise ValidationFailed({field: "must be a single line"})
    if len(text) > limit:
        raise ValidationFailed({field: f"is {len(text)} characters; at most {limit} allowed"})
    _refuse_invisible(field, text)
    return text


CONTENT_FIELDS = (
    "kind",
    "space",
    "title",
    "body",
    "tags",
    "review_by",
    "valid_from",
    "valid_until",
    "confidence",
    "metadata",
)


def clean_content(data: Mapping[str, Any]) -> dict[str, Any]:
    """Validate every content field of a create/revise; report all problems at once."""
    unknown = sorted(set(data) - set(CONTENT_FIELDS))
    if unknown:
        raise ValidationFailed({name: f"unknown field; allowed: {', '.join(CONTENT_FIELDS)}" for name in unknown})
    errors: dict[str, str] = {}
    cleaned: dict[str, Any] = {}

    def run(field: str, fn: Callable[..., object], *args: object) -> None:
        try:
            cleaned[field] = fn(*args)
        except ValidationFailed as exc:
            errors.update(exc.fields)

    run("kind", clean_kind, data.get("kind"))
    run("space", clean_space, data.get("space"))
    run("title", clean_title, data.get("title"))
    run("body", clean_body, data.get("body"))
    run("tags", clean_tags, data.get("tags"))
    run("valid_from", clean_date, "valid_from", data.get("valid_from"))
    run("valid_until", clean_date, "valid_until", data.get("valid_until"))
    run("confidence", clean_confidence, data.get("confidence"))
    run("metadata", clean_metadata, data.get("metadata"))
    if "kind" in cleaned:
        run("review_by", clean_review_by, data.get("review_by"), cleaned["kind"])
    vf, vu = cleaned.get("valid_from"), cleaned.get("valid_until")
    if vf and vu and vu < vf:
        errors["valid_until"] = f"{vu} is before valid_from {vf}"
    if errors:
        raise ValidationFailed(errors)
    return cleaned
