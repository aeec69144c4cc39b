"""The words a reviewer decides with, in one place.

A dispute or a retirement proposal is decided by what happens to the
*record*, never by "accept" or "reject" (accepting a dispute retires the
record; rejecting it keeps the record: an inversion that made reviewers
retire records by habit). The inbox, the worklists, the record page, the
admin, flash messages and the CLI all take their labels from here, and the
controls carry ``data-decision="keep|correct|retire"``.

The keys live here too, so the help dialog and keys.js agree: on a dispute or
retirement card no single key retires or replaces a record (``t`` only opens
the confirm step; ``e`` only opens the correction form).
"""

from __future__ import annotations

from typing import Any

KEEP = "keep"
CORRECT = "correct"
RETIRE = "retire"
DECISIONS = (KEEP, CORRECT, RETIRE)

# The control that decides (button, link or the opener of a confirm step).
LABELS = {
    KEEP: "Keep record",
    CORRECT: "Correct record…",
    RETIRE: "Retire record",
}
# The opener of a confirm step (a <details>) and the button inside it.
OPENERS = {KEEP: "Keep record…", CORRECT: "Correct record…", RETIRE: "Retire record…"}
CONFIRMS = {KEEP: "Keep record", CORRECT: "Accept corrected version", RETIRE: "Retire record"}
# What each decision does to the record (title attributes, help, CLI help).
MEANINGS = {
    KEEP: "the record stands: its disputes (or the retirement proposal) are rejected and agents receive it again",
    CORRECT: "a corrected version you write becomes a new approved record that replaces it",
    RETIRE: "the record is retired: kept in history, never delivered again",
}
KEYS = {KEEP: "s", CORRECT: "e", RETIRE: "t"}
KEY_HELP = {
    KEEP: "keep record (type an optional note, then Enter)",
    CORRECT: "correct record (edit, then accept)",
    RETIRE: "retire record: opens the confirm step (type why, then Enter)",
}

# Keys that move, filter, load and go, beside the deciding ones above.
# keys.js reads them from the page (base.html's data-keys, from here), so the
# help dialog, the docs and the script agree.
MORE_KEYS = {
    "merge": "m",  # a hint's "Merge into revision of …" on the current card
    "duplicate": "d",  # a hint's "Reject as duplicate of …" on the current card
    "next_page": "n",  # the next page of the inbox (j does it too past the last card)
    "search": "/",  # the words filter (opens Filter and sort)
    "filters": "f",  # open or close Filter and sort
    "next_filter": "]",  # the next action filter chip (All, Create, Revise, …)
    "previous_filter": "[",
    "view": "v",  # cards / compact list, on this device
    "go": "g",  # then a letter of GO: another page
}
# g then a letter: the page (URL name) it goes to, and its name.
GO = {
    "i": ("home", "Inbox"),
    "u": ("due", "Due"),
    "p": ("disputed", "Disputed"),
    "c": ("edited", "Changed outside Vetted"),
    "r": ("records", "Records"),
    "h": ("recent_decisions", "Decisions"),
}


def key_table() -> list[tuple[str, list[tuple[list[str], str]]]]:
    """Every key, by section: the help dialog and docs/reviewer-day.md list these."""
    more = MORE_KEYS
    return [
        (
            "Move",
            [
                (["j", "k"], "next / previous card; past the last card, j loads the next page"),
                (["o"], "open a line of the compact list (its full card)"),
                ([more["next_page"]], "load the next page"),
            ],
        ),
        (
            "Decide a new record or a revision",
            [
                (["a"], "accept (on the Due list: verify)"),
                (["e"], "revise (edit, then accept; Ctrl+Enter sends)"),
                (["r"], "reject (type an optional note, then Enter)"),
                ([more["merge"]], "merge into a revision of the close record a hint names"),
                ([more["duplicate"]], "reject as a duplicate of the close match a hint names"),
            ],
        ),
        (
            "Decide a dispute or a retirement (no single key retires or replaces a record)",
            [([KEYS[d]], KEY_HELP[d]) for d in DECISIONS],
        ),
        (
            "Filter and view",
            [
                ([more["search"]], "search words (opens Filter and sort)"),
                ([more["filters"]], "open or close Filter and sort"),
                ([more["previous_filter"], more["next_filter"]], "previous / next action filter (All, Create, …)"),
                ([more["view"]], "switch between cards and the compact list (on this device)"),
            ],
        ),
        (
            "Go to",
            [([more["go"], letter], name) for letter, (_url, name) in GO.items()],
        ),
        (
            "Other",
            [
                (["u"], "undo the last decision (while its Undo button shows)"),
                (["x"], "select for a bulk decision"),
                (["?"], "this help"),
            ],
        ),
    ]


# What happened, as messages, the toast and the Recent decisions page say it.
PAST = {KEEP: "Kept", CORRECT: "Corrected", RETIRE: "Retired"}
DONE = {
    **{decision: f"{PAST[decision]} record" for decision in DECISIONS},
    "accepted": "Accepted",
    "rejected": "Rejected",
    "revised": "Revised record",
    "moved": "Moved record",
    "verified": "Verified",
}


def proposal_outcome(action: str, state: str, *, edited: bool = False) -> str:
    """The DONE key for a decided proposal: a dispute or retirement is named by
    what happened to its record; a create or revise by accepted/rejected."""
    if action in ("dispute", "retire"):
        if state == "rejected":
            return KEEP
        return CORRECT if edited else RETIRE
    return "accepted" if state == "accepted" else "rejected"


_EVENT_OUTCOME = {
    "record.dispute_cleared": KEEP,
    "record.retired": RETIRE,
    "record.revised": "revised",
    "record.moved": "moved",
    "record.verified": "verified",
}


def event_outcome(event_type: str, extra: dict[str, Any]) -> str:
    """The DONE key for a decision's AuditEvent (see reviews.actions.undo)."""
    if event_type == "proposal.accepted":
        return proposal_outcome(extra.get("action", ""), "accepted", edited="supersedes" in extra)
    if event_type == "proposal.rejected":
        return proposal_outcome(extra.get("action", ""), "rejected")
    if event_type == "record.revised" and extra.get("previous_status") == "disputed":
        return CORRECT  # Correct record… on /disputed/ or the record page
    return _EVENT_OUTCOME.get(event_type, "accepted")


TITLES_SHOWN = 3
TITLE_CHARS = 60


def titles(names: list[str], *, shown: int = TITLES_SHOWN, chars: int = TITLE_CHARS) -> str:
    """A few titles for a message, each cut to ``chars``: "A, B, C, …"."""
    cut = [name if len(name) <= chars else name[: chars - 1].rstrip() + "…" for name in names[:shown]]
    return ", ".join(cut) + (", …" if len(names) > shown else "")


def summary(verb: str, names: list[str]) -> str:
    """ "Accepted 3: Billing-api uses Django 5.1, …" or "Accepted: Title."."""
    text = titles(names)
    end = "" if text.endswith("…") else "."
    return f"{verb}: {text}{end}" if len(names) == 1 else f"{verb} {len(names)}: {text}{end}"
