"""`vetted GROUP NAME --help` without starting Django.

A command's help comes from its management command's argparse parser, and
building that parser means importing the command's module, which imports
the models, so Django must be set up first: 0.6-1.1 s on a quiet 2-core
machine before one line of help. Instead, help.json (next to this file)
keeps each command's help as its parser prints it, with a digest of the
command's source file; `--help` prints the kept text when the digest still
matches the file (about 0.1 s) and asks the parser otherwise, so an edited
command never shows stale help. `python -m memory_site.docs_reference
--write` rewrites help.json with the reference pages, and its `--check`
(tests/test_docs.py) fails when help.json differs from what the parsers say,
which also covers a change outside the command's own file (a shared option).

Standard library only at import: this runs before Django.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

HELP_FILE = Path(__file__).with_name("help.json")
COLUMNS = 80  # the width the kept help is written for (argparse's own default)
HELP_FLAGS = frozenset({"-h", "--help"})


def _source_digest(module: str) -> str | None:
    try:
        spec = importlib.util.find_spec(module)  # imports the parent packages only (all light)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    try:
        return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()
    except OSError:
        return None


def kept(words: list[str], args: list[str]) -> str | None:
    """The kept help of ``vetted WORDS ARGS`` when ARGS asks only for help
    (`--help`, or `SUB --help` for a subcommand) and the command's source is
    unchanged; None when the parser must answer."""
    if not args or args[-1] not in HELP_FLAGS or any(a.startswith("-") for a in args[:-1]):
        return None
    if os.environ.get("VETTED_LIVE_HELP"):
        return None
    try:
        table = json.loads(HELP_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = table.get(" ".join([*words, *args[:-1]]))
    if not isinstance(entry, dict) or _source_digest(entry.get("module", "")) != entry.get("source"):
        return None
    text = entry.get("help")
    return text if isinstance(text, str) else None


# ----------------------------------------------------------------- writing help.json (Django set up)


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _parsers(words: list[str], parser: argparse.ArgumentParser) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    yield words, parser
    for name, sub in _subparsers(parser):
        yield from _parsers([*words, name], sub)


def command_parser(words: list[str], command_name: str):
    """The management command behind ``vetted WORDS`` and its parser, named as typed."""
    from django.core.management import get_commands, load_command_class

    command = load_command_class(get_commands()[command_name], command_name)
    return command, command.create_parser("vetted", " ".join(words))


def render() -> str:
    """help.json's text: every hand-over command's help and its subcommands'."""
    from . import table

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(COLUMNS)  # argparse wraps to the terminal's width; keep one
    try:
        entries = {}
        for words, target in table.handovers():
            command, parser = command_parser(words, target.command)
            module = type(command).__module__
            digest = _source_digest(module)
            for path, sub in _parsers(words, parser):
                entries[" ".join(path)] = {"module": module, "source": digest, "help": sub.format_help()}
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return json.dumps(entries, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
