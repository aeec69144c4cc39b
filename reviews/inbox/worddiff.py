"""A readable word-level diff for the inbox (revise proposals)."""

from __future__ import annotations

import difflib
import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Words and the whitespace between them are separate tokens, so a change
# shows as whole words and line breaks survive (the output sits in a
# white-space: pre-wrap block).
_TOKEN_RE = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> SafeString:
    """HTML with removed words in <del> and added words in <ins>; all text escaped."""
    a = _TOKEN_RE.findall(old or "")
    b = _TOKEN_RE.findall(new or "")
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if op in ("delete", "replace"):
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return mark_safe("".join(out))  # noqa: S308 - every piece is escaped above


def changed_fields(record, proposal) -> list[str]:
    """Names of content fields where ``proposal`` differs from ``record``."""
    names = []
    for name in ("title", "body", "kind", "tags"):
        old, new = getattr(record, name), getattr(proposal, name)
        if name == "tags":
            old, new = sorted(old or []), sorted(new or [])
        if old != new:
            names.append(name)
    return names
