"""How much text each tool takes from one file, and the order records are
cut in when a selection does not fit.

The figures are the tools' own limits or warnings where they state one:
Codex reads at most 32 KiB of AGENTS.md (``project_doc_max_bytes``); Claude
Code warns when a CLAUDE.md passes 40,000 characters; Windsurf caps a rules
file at 6,000 characters; Copilot code review reads the first 4,000
characters of its instructions; Cursor asks for rules under 500 lines (about
16,000 characters). Any other file gets 32,000 characters."""

from __future__ import annotations

from pathlib import Path

DEFAULT_BUDGET = 32_000
_BY_NAME = {
    "claude.md": 40_000,
    "claude.local.md": 40_000,
    "agents.md": 32_768,
    "gemini.md": 40_000,
    "copilot-instructions.md": 4_000,
    ".windsurfrules": 6_000,
}
MDC_BUDGET = 16_000
# Cut order: records of the first kinds are kept first, then the most recently approved.
KIND_ORDER = ("procedure", "preference", "fact", "decision", "reference", "event")


def budget_for(path: Path) -> int:
    name = path.name.lower()
    if name.endswith(".mdc"):
        return MDC_BUDGET
    return _BY_NAME.get(name, DEFAULT_BUDGET)


def cut_order_key(kind: str, approved_at_timestamp: float, public_id: str) -> tuple:
    rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    return (rank, -approved_at_timestamp, public_id)
