"""The vault: one person's approved memory as a folder of Markdown notes
(Obsidian-readable), kept in step with each decision, whose edits come back
as proposals from that person.

Layout: ``<space>/<slug>--<id>.md`` per deliverable record (export_markdown's
format, plus ``[[wikilinks]]`` to what it supersedes and what superseded it),
``<space>/_index.md`` per space, ``_pending/<proposal id>.md`` for what waits,
``_inbox/`` for new notes. ``.vetted-vault.json`` remembers what Vetted last
wrote (a digest per file), which is how an edit is told from Vetted's own write.

Modules: ``notes`` (what each file says), ``state`` (the manifest),
``reconcile`` (edits into proposals, then the files brought in step) and
``watch`` (file events, one watcher per folder)."""

from .reconcile import VaultResult, reconcile
from .watch import VaultBusy, hold_vault, watch_vault

__all__ = ["VaultBusy", "VaultResult", "hold_vault", "reconcile", "watch_vault"]
