"""The documentation's reference pages, generated from the code:
``docs/reference/configuration.md`` (the settings readers),
``docs/reference/commands.md`` (the commands' parsers) and
``docs/reference/mcp-tools.md`` (the MCP server's tool list), and the help
`vetted GROUP NAME --help` prints without starting Django
(``memory_site/command_line/help.json``, see helptext.py).

``python -m memory_site.docs_reference --write`` writes them; ``--check``
exits 1, naming the pages, when a committed page differs from what the code
says (tests/test_docs.py runs it). Run it as its own process: it sets up
Django in a clean environment, so this machine's ``VETTED_*`` variables never
reach a page.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from common.defaults import PROJECT_DIR

REFERENCE_DIR = PROJECT_DIR / "docs" / "reference"
REGENERATE = "python -m memory_site.docs_reference --write"
HELP_NAME = "help.json"  # not a page: memory_site/command_line/help.json


def _path(name: str) -> Path:
    from memory_site.command_line import helptext

    return helptext.HELP_FILE if name == HELP_NAME else REFERENCE_DIR / name


def _clean_django(home: Path) -> None:
    """Django with the default settings and no VETTED_* variable but a
    throwaway VETTED_HOME, so defaults shown on a page are the code's own."""
    for name in [n for n in os.environ if n.startswith("VETTED_")]:
        del os.environ[name]
    os.environ["VETTED_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "memory_site.settings"
    import django

    django.setup()


def render() -> tuple[dict[str, str], list[str]]:
    """{file name: text} for each page (and help.json), and the configuration's problems."""
    from memory_site.command_line import helptext

    from . import commands, config, tools

    variables = config.variables()
    with tempfile.TemporaryDirectory(prefix="vetted-docs-") as home:
        _clean_django(Path(home))
        pages = {
            "configuration.md": config.page(variables),
            "commands.md": commands.page(),
            "mcp-tools.md": tools.page(),
        }
        kept_help = helptext.render()
        if home in kept_help or str(Path(home).resolve()) in kept_help:
            # The kept help is printed as it is: a path of this run in it would be wrong everywhere else.
            raise SystemExit("A command's help names this run's VETTED_HOME; word the default without the path.")
        # A default computed from VETTED_HOME or the checkout shows as such.
        resolved = str(Path(home).resolve())
        pages = {
            name: text.replace(resolved, "$VETTED_HOME").replace(home, "$VETTED_HOME").replace(str(PROJECT_DIR), ".")
            for name, text in pages.items()
        }
    pages[HELP_NAME] = kept_help
    return pages, config.problems(variables)


def stale_pages(pages: dict[str, str], directory: Path) -> list[str]:
    """The pages whose committed file is missing or differs from the text the code gives."""

    def where(name: str) -> Path:
        return _path(name) if name == HELP_NAME else directory / name

    return [
        name
        for name, text in pages.items()
        if not where(name).is_file() or where(name).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_site.docs_reference", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write the pages into docs/reference/")
    mode.add_argument("--check", action="store_true", help="exit 1 if a committed page differs from the code")
    args = parser.parse_args(argv)
    pages, problems = render()
    for problem in problems:
        print(f"configuration: {problem}", file=sys.stderr)
    if args.write:
        REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
        for name, text in pages.items():
            _path(name).write_text(text, encoding="utf-8")
        print(f"Wrote {len(pages) - 1} pages into {REFERENCE_DIR}, and {_path(HELP_NAME)}.")
        return 1 if problems else 0
    stale = stale_pages(pages, REFERENCE_DIR)
    for name in stale:
        shown = "memory_site/command_line/help.json" if name == HELP_NAME else f"docs/reference/{name}"
        print(f"{shown} differs from what the code says.", file=sys.stderr)
    if stale or problems:
        print(f"Regenerate with `{REGENERATE}` (or `make docs`) and commit the pages.", file=sys.stderr)
        return 1
    print(f"The {len(pages) - 1} reference pages and the kept help match the code.")
    return 0
