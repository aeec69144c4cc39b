"""Markdown portability: export approved records as a folder of Markdown
notes (Obsidian-readable, git-diffable) and import folders of notes and
agent instruction files (CLAUDE.md, AGENTS.md) as proposals.

File format (one record per file)::

    ---
    id: rec_1a2b3c4d5e6f
    title: Billing API repository
    kind: fact
    space: team
    status: approved
    tags:
    - billing
    review_by: 2027-05-30
    ...
    ---

    <the body, exactly as approved>

File names are ``<slug>--<record id>.md``: the slug (ASCII, lowercase, at most
60 characters) keeps them readable, the id makes them unique and stable (a
record's title and id never change; a revision is a new record with a new
id, hence a new file). Output is deterministic: fixed key order, no export
time inside the notes (it lives in ``.vetted-export.json``).

Nothing here changes the database except through ``reviews.actions``.

Modules: ``notes`` (the format: names, front matter, file names), ``export``,
``parse`` (notes and instruction files into items) and ``importer``.
"""

from .export import ExportResult, export_markdown, record_front_matter, render_record
from .importer import ImportOutcome, StrictImportFailed, collect_files, import_markdown, manifest_space
from .notes import (
    HISTORY_STATUSES,
    MANIFEST_NAME,
    SLUG_MAX,
    MarkdownError,
    TooShort,
    dump_front_matter,
    file_name,
    render_note,
    slugify,
    split_front_matter,
)
from .parse import Item, inline_tags, parse_instructions, parse_note, title_from_text

__all__ = [
    "HISTORY_STATUSES",
    "MANIFEST_NAME",
    "SLUG_MAX",
    "ExportResult",
    "ImportOutcome",
    "Item",
    "MarkdownError",
    "StrictImportFailed",
    "TooShort",
    "collect_files",
    "dump_front_matter",
    "export_markdown",
    "file_name",
    "import_markdown",
    "inline_tags",
    "manifest_space",
    "parse_instructions",
    "parse_note",
    "record_front_matter",
    "render_note",
    "render_record",
    "slugify",
    "split_front_matter",
    "title_from_text",
]
