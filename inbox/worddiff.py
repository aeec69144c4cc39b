"""A readable word-level diff for the inbox (revise proposals), with bounded work.

difflib's longest-match diff is quadratic or worse on repetitive text: an
agent's 20 000-character revision made of a few short words in another order
took 20 s to diff against a 1 000-character record, and a page of such cards
locked the reviewer out. So the work is counted and capped, as git does it:

1. Common leading and trailing lines are cut off (linear); the rest is
   diffed line by line.
2. Each block of changed lines is diffed word by word (its common ends cut
   off first), so a reviewer still sees which words changed.
3. All matching shares one budget of element comparisons (``WORK_BUDGET``).
   A block whose word diff would exceed what is left is shown whole (old
   text removed, new text added), and so is everything if the line diff
   itself would exceed it.

So one diff costs at most the budget plus linear work, whatever the texts.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# A token is a word with the whitespace after it, so a change shows as whole
# words and line breaks survive (the output sits in a white-space: pre-wrap
# block). Whitespace on its own would be the commonest token by far and
# make every search cost |a| x |b|.
_TOKEN_RE = re.compile(r"\S+\s*|\s+")
_TRAILING_SPACE_RE = re.compile(r"\s*$")

# Element comparisons all the matchers of one diff may make together: about
# 10 ms of CPU here (~0.1 us each). Ordinary revisions, even of the largest
# bodies, use a fraction of it (each changed paragraph is word-diffed alone).
WORK_BUDGET = 100_000

WHOLE_NOTE = "Some changes are too scattered for a word-by-word diff: those parts are shown removed, then added."


class OverBudget(Exception):
    """A matcher would exceed the diff's work budget."""


@dataclass
class Budget:
    remaining: int = WORK_BUDGET
    spent: int = 0

    def spend(self, cost: int) -> None:
        if cost > self.remaining:
            raise OverBudget
        self.remaining -= cost
        self.spent += cost


class BoundedMatcher(difflib.SequenceMatcher):
    """SequenceMatcher that charges each longest-match search to a Budget before
    running it, and raises OverBudget instead of going over."""

    def __init__(self, a, b, budget: Budget):
        self.budget = budget
        super().__init__(None, a, b, autojunk=False)

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi = len(self.a) if ahi is None else ahi  # type: ignore[attr-defined]  # (as below)
        bhi = len(self.b) if bhi is None else bhi  # type: ignore[attr-defined]
        # difflib's inner loop walks b2j[a[i]] up to the first j >= bhi, so this
        # is exactly its number of steps (plus one per element of a).
        b2j, a = self.b2j, self.a  # type: ignore[attr-defined]  # SequenceMatcher's own attributes, not in typeshed
        cost = ahi - alo
        for i in range(alo, ahi):
            positions = b2j.get(a[i])
            if positions:
                cost += bisect_left(positions, bhi)
        self.budget.spend(cost)
        return super().find_longest_match(alo, ahi, blo, bhi)


def _common_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """Lengths of the common prefix and (non-overlapping) common suffix."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _opcodes(a: list[str], b: list[str], budget: Budget) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes for a -> b, the common ends cut off before matching."""
    head, tail = _common_ends(a, b)
    ops = [("equal", 0, head, 0, head)] if head else []
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if middle_a and middle_b:
        # The first search alone costs len(a) + sum over tokens of count_a *
        # count_b: checked with Counters (C speed) before building a matcher.
        counts_b = Counter(middle_b)
        first = len(middle_a) + sum(n * counts_b[t] for t, n in Counter(middle_a).items())
        if first > budget.remaining:
            raise OverBudget
    if middle_a or middle_b:
        for op, i1, i2, j1, j2 in BoundedMatcher(middle_a, middle_b, budget).get_opcodes():
            ops.append((op, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        ops.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return ops


@dataclass
class Diff:
    """Pieces of the diff in order: (op, text) with op "equal", "delete" or "insert"."""

    pieces: list[tuple[str, str]] = field(default_factory=list)
    whole_blocks: int = 0  # changed blocks shown whole because of the budget
    spent: int = 0  # element comparisons made (at most WORK_BUDGET)


def _words(old: str, new: str, budget: Budget, diff: Diff) -> None:
    a, b = _TOKEN_RE.findall(old), _TOKEN_RE.findall(new)
    try:
        ops = _opcodes(a, b, budget)
    except OverBudget:
        head, tail = _common_ends(a, b)
        ops = [
            ("equal", 0, head, 0, head),
            ("replace", head, len(a) - tail, head, len(b) - tail),
            ("equal", len(a) - tail, len(a), len(b) - tail, len(b)),
        ]
        diff.whole_blocks += 1
    for op, i1, i2, j1, j2 in ops:
        removed, added = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            diff.pieces.append(("equal", removed))
            continue
        # "word7 " -> "changed7 ": the shared space after them is not a change.
        space = ""
        if op == "replace":
            found = _TRAILING_SPACE_RE.search(removed)
            space = found.group() if found is not None else ""
            space = space if added.endswith(space) else ""
            removed, added = removed[: len(removed) - len(space)], added[: len(added) - len(space)]
        if op in ("delete", "replace"):
            diff.pieces.append(("delete", removed))
        if op in ("insert", "replace"):
            diff.pieces.append(("insert", added))
        if space:
            diff.pieces.append(("equal", space))


def compute(old: str, new: str, budget_size: int = WORK_BUDGET) -> Diff:
    """The bounded diff of ``old`` -> ``new`` (see the module docstring)."""
    budget, diff = Budget(remaining=budget_size), Diff()
    a, b = (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True)
    try:
        line_ops = _opcodes(a, b, budget)
    except OverBudget:
        line_ops = [("replace", 0, len(a), 0, len(b))]
    for op, i1, i2, j1, j2 in line_ops:
        if op == "equal":
            diff.pieces.append(("equal", "".join(a[i1:i2])))
        else:
            _words("".join(a[i1:i2]), "".join(b[j1:j2]), budget, diff)
    diff.spent = budget.spent
    return diff


def word_diff(old: str, new: str) -> SafeString:
    """HTML with removed words in <del> and added words in <ins>; all text escaped.
    Parts too costly to diff word by word are shown whole, with a note saying so."""
    diff = compute(old, new)
    out: list[str] = [f'<span class="diff-note">{WHOLE_NOTE}</span>\n'] if diff.whole_blocks else []
    for op, text in diff.pieces:
        if not text:
            continue
        if op == "equal":
            out.append(escape(text))
        elif op == "delete":
            out.append(f"<del>{escape(text)}</del>")
        else:
            out.append(f"<ins>{escape(text)}</ins>")
    return mark_safe("".join(out))  # noqa: S308 - every piece is escaped above
