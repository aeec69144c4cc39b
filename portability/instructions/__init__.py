"""Agent instruction files in as proposals: CLAUDE.md (with its ``@path``
imports), AGENTS.md, GEMINI.md, copilot-instructions.md, Cursor ``.mdc`` rules
and ``.windsurfrules``. Each bullet or section is a candidate with its file and
line; the kind is guessed from its words and heading; a text repeated across
files becomes one proposal naming every place it was found.

Modules: ``files`` (which files, read safely, imports followed once inside the
folder given), ``pieces`` (a file into candidates, the kind guess) and
``importer`` (candidates into proposals through ``reviews.actions``).
"""

from .files import Refusal, Source, collect_sources, is_instruction_path
from .importer import InstructionImport, import_instructions
from .pieces import Candidate, detect_kind, pieces_of

__all__ = [
    "Candidate",
    "InstructionImport",
    "Refusal",
    "Source",
    "collect_sources",
    "detect_kind",
    "import_instructions",
    "is_instruction_path",
    "pieces_of",
]
