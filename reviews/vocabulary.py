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
