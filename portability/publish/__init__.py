"""Publishing approved memory into the files each AI tool reads: a managed
block between marker comments, holding the deliverable records a selection
names; text outside the block is never changed, and a hand edit inside it
becomes a proposal from that person instead of being overwritten.

Modules: ``block`` (markers, reading and replacing the block), ``budgets``
(each tool's size and the order records are cut in), ``selection`` (who
publishes which spaces where, and what is deliverable), ``sync`` (one file
brought in step)."""

from .block import BEGIN, END, BlockError
from .budgets import budget_for
from .selection import Selection, SelectionError
from .sync import SyncResult, publish_file

__all__ = [
    "BEGIN",
    "END",
    "BlockError",
    "Selection",
    "SelectionError",
    "SyncResult",
    "budget_for",
    "publish_file",
]
