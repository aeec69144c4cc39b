"""The command reference, from the parsers of Vetted's own management commands.

Each command builds its argparse parser as ``manage.py COMMAND --help`` would;
the page lists its arguments (with subcommands, each one's) without Django's
own options, which every command shares.
"""

from __future__ import annotations

import argparse
from typing import Any

# The apps whose commands are Vetted's (Django's and the libraries' are not listed).
APPS = ("reviews", "inbox", "portability", "retrieval", "mcp_bridge", "notify", "devtools")
# Django's options on every command: listed once at the top, not per command.
COMMON = {
    "help",
    "version",
    "verbosity",
    "settings",
    "pythonpath",
    "traceback",
    "no_color",
    "force_color",
    "skip_checks",
}


def _is_development(name: str) -> bool:
    return name.startswith("bench_") or name in ("eval_retrieval", "stress")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    try:
        return text % {**vars(action), "prog": prog}
    except (KeyError, TypeError, ValueError):
        return text


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest if not action.option_strings else action.dest.upper()


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return _metavar(action)
    flags = ", ".join(action.option_strings)
    return flags if action.nargs == 0 else f"{flags} {_metavar(action)}"


def _default(action: argparse.Action) -> str:
    value = action.default
    if action.nargs == 0 or value in (None, argparse.SUPPRESS, [], "") or value is False:
        return ""
    return f"`{value}`"


def _table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.dest in COMMON or isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        rows.append(f"| `{_cell(_argument(action))}` | {_default(action)} | {_cell(_help(action, parser.prog))} |")
    return ["| argument | default | what it does |", "|---|---|---|", *rows] if rows else []


def _usage(name: str, parser: argparse.ArgumentParser) -> str:
    parts = [f"manage.py {name}"]
    for action in parser._actions:
        if action.dest in COMMON or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            parts.append("SUBCOMMAND")
            continue
        arg = _argument(action)
        if action.option_strings:
            arg = action.option_strings[0] + ("" if action.nargs == 0 else f" {_metavar(action)}")
            parts.append(arg if action.required else f"[{arg}]")
        else:
            parts.append(arg if action.nargs not in ("?", "*") else f"[{arg}]")
    return " ".join(parts)


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for sub_name, sub in action.choices.items():
                found.append((sub_name, sub, helps.get(sub_name, "")))
    return found


def _section(name: str, command: Any, parser: argparse.ArgumentParser) -> list[str]:
    out = [f"### `{name}`", ""]
    summary = " ".join((command.help or "").split())
    if summary:
        out += [summary, ""]
    out += ["```text", _usage(name, parser), "```", ""]
    table = _table(parser)
    if table:
        out += [*table, ""]
    for sub_name, sub, sub_help in _subparsers(parser):
        out += [f"#### `{name} {sub_name}`", ""]
        text = " ".join((sub_help or sub.description or "").split())
        if text:
            out += [text, ""]
        out += ["```text", _usage(f"{name} {sub_name}", sub), "```", ""]
        table = _table(sub)
        if table:
            out += [*table, ""]
    return out


def page() -> str:
    from django.core.management import get_commands, load_command_class

    commands = sorted((name, app) for name, app in get_commands().items() if app in APPS)
    user = [(n, a) for n, a in commands if not _is_development(n)]
    development = [(n, a) for n, a in commands if _is_development(n)]
    out = [
        "# Command reference",
        "",
        "Every option of Vetted's own commands, generated from their parsers",
        "(`python -m memory_site.docs_reference --write`). Run them as `.venv/bin/python manage.py COMMAND`;",
        "each also takes Django's common options (`--verbosity`, `--settings`, `--traceback`, `--no-color`,",
        "`--force-color`, `--skip-checks`, `--help`). What each command is for and what it prints:",
        "[Command line](../cli.md).",
    ]
    for title, group in (("Commands", user), ("Benchmarks and evaluations", development)):
        out += ["", f"## {title}", ""]
        for name, app in group:
            command = load_command_class(app, name)
            parser = command.create_parser("manage.py", name)
            out += _section(name, command, parser)
    while out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"
