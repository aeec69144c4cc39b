"""The command reference, from the `vetted` tool itself: its sections,
groups and commands in the order `vetted --help` shows them; for a command
that hands over, its management command's parser as `vetted GROUP NAME
--help` builds it (with subcommands, each one's), without Django's own
options, which every such command shares; then the development commands
(table.NOT_VETTED), which stay `manage.py NAME`.
"""

from __future__ import annotations

import argparse
from typing import Any

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
    parts = [name]
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


def _options_table(rows: list[tuple[str, str, str]]) -> list[str]:
    lines = [f"| `{_cell(arg)}` | {default} | {_cell(text)} |" for arg, default, text in rows]
    return ["| argument | default | what it does |", "|---|---|---|", *lines] if lines else []


def _parser_block(title: str, text: str, usage_name: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    out = [f"{'#' * level} `{title}`", ""]
    text = " ".join((text or "").split())
    if text:
        out += [text, ""]
    out += ["```text", _usage(usage_name, parser), "```", ""]
    table = _table(parser)
    if table:
        out += [*table, ""]
    for sub_name, sub, sub_help in _subparsers(parser):
        out += _parser_block(
            f"{title} {sub_name}", sub_help or sub.description or "", f"{usage_name} {sub_name}", sub, level + 1
        )
    return out


def _handover(words: list[str], handover: Any, level: int) -> list[str]:
    from memory_site.command_line import helptext

    command, parser = helptext.command_parser(words, handover.target.command)
    title = " ".join(["vetted", *words])
    text = " ".join((command.help or handover.target.summary).split())
    return _parser_block(title, text, title, parser, level)


def _click_default(param: Any) -> str:
    if not getattr(param, "show_default", False) or param.default in (None, False, ""):
        return ""
    return f"`{param.default}`"


def _click_command(words: list[str], command: Any, level: int) -> list[str]:
    import click

    title = " ".join(["vetted", *words])
    out = [f"{'#' * level} `{title}`", ""]
    if command.help:
        out += [" ".join(command.help.split()), ""]
    with click.Context(command, info_name=title) as ctx:
        pieces = command.collect_usage_pieces(ctx)
    out += ["```text", " ".join([title, *pieces]), "```", ""]
    rows = []
    for param in command.params:
        if isinstance(param, click.Option):
            flags = ", ".join(param.opts)
            metavar = param.metavar or ("N" if param.type.name in ("integer", "integer range", "float") else "TEXT")
            arg = flags if param.is_flag else f"{flags} {metavar}"
            rows.append((arg, _click_default(param), param.help or ""))
        elif isinstance(param, click.Argument) and command.add_help_option:
            choices = getattr(param.type, "choices", None)
            rows.append(("{" + ",".join(choices) + "}" if choices else param.name.upper(), "", ""))
    table = _options_table(rows)
    if table:
        out += [*table, ""]
    return out


def _entry(words: list[str], command: Any, level: int) -> list[str]:
    import click

    from memory_site.command_line.app import Handover

    if isinstance(command, Handover):
        return _handover(words, command, level)
    if isinstance(command, click.Group):
        title = " ".join(["vetted", *words])
        out = [f"{'#' * level} `{title}`", "", " ".join((command.help or "").split()), ""]
        out += [f"Its commands: {', '.join(f'`{title} {name}`' for name in command.commands)}.", ""]
        for name, member in command.commands.items():
            out += _entry([*words, name], member, level + 1)
        return out
    return _click_command(words, command, level)


def _development(name: str, app: str) -> list[str]:
    from django.core.management import load_command_class

    from memory_site.command_line.table import NOT_VETTED

    command = load_command_class(app, name)
    parser = command.create_parser("manage.py", name)
    out = _parser_block(f"manage.py {name}", command.help or "", f"manage.py {name}", parser, 3)
    return [*out[:2], f"*Not a `vetted` command: {NOT_VETTED[name]}.*", "", *out[2:]]


def page() -> str:
    from django.core.management import get_commands

    from memory_site.command_line import table
    from memory_site.command_line.app import cli

    out = [
        "# Command reference",
        "",
        "Every `vetted` command, its subcommands and options, generated from the tool itself",
        f"(`{_regenerate()}`). A command that hands over to a management command also takes",
        "Django's common options (`--verbosity`, `--settings`, `--traceback`, `--no-color`, `--force-color`,",
        "`--skip-checks`); every command answers `--help`. What each command is for and what it prints:",
        "[Command line](../cli.md).",
    ]
    for title, names in table.SECTIONS:
        out += ["", f"## {title}", ""]
        for name in names:
            out += _entry([name], cli.commands[name], 3)
    development = sorted((n, a) for n, a in get_commands().items() if n in table.NOT_VETTED)
    out += [
        "",
        "## Development commands",
        "",
        "Benchmarks, evaluations and what clients start: not `vetted` commands, run as",
        "`.venv/bin/python manage.py NAME`.",
        "",
    ]
    for name, app in development:
        out += _development(name, app)
    while out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def _regenerate() -> str:
    from . import REGENERATE

    return REGENERATE
