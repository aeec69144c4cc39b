"""The `vetted` command line: groups of subcommands a person can guess, each
handing over to a management command (table.py), plus serve, status, stop.

Only click is imported to parse and to answer `--help` for the groups;
Django is set up when a command runs (run.py)."""

from __future__ import annotations

import sys

import click

from common.defaults import DEFAULT_PORT

from . import helptext, table

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
PROG = "vetted"


class Handover(click.Command):
    """A subcommand whose arguments and --help belong to a management command."""

    def __init__(self, name: str, target: table.Target):
        super().__init__(
            name,
            help=target.summary,
            short_help=target.summary,
            add_help_option=False,  # the management command's parser answers --help
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
        )
        words = target.words
        self.params = [
            click.Argument(
                ["args"],
                nargs=-1,
                type=click.UNPROCESSED,
                shell_complete=lambda ctx, param, incomplete: (
                    [click.shell_completion.CompletionItem(w) for w in words if w.startswith(incomplete)]
                    if not ctx.params.get("args")
                    else []
                ),
            )
        ]
        self.target = target

    def invoke(self, ctx: click.Context) -> None:
        args = list(ctx.params["args"])
        text = helptext.kept(ctx.command_path.split()[1:], args)
        if text is not None:  # the parser's own help, kept: no Django start for it
            click.echo(text, nl=False)
            return
        from .run import run_command

        run_command(self.target.command, ctx.command_path, args)


class Sectioned(click.Group):
    """`vetted --help` lists the commands by what a person wants to do, in
    the order of table.SECTIONS (click would sort them by name)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for _, names in table.SECTIONS for name in names if name in self.commands]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        longest = max(len(name) for name in self.commands)
        width = formatter.width - 6 - longest
        for title, names in table.SECTIONS:
            rows = [
                (name.ljust(longest), self.commands[name].get_short_help_str(width))
                for name in names
                if name in self.commands
            ]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Ordered(click.Group):
    """A group that lists its commands in the table's order."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


def _group(name: str, group: table.Group) -> click.Group:
    summary, members = group
    built = Ordered(name, help=summary, short_help=summary, context_settings=CONTEXT)
    for member, target in members.items():
        built.add_command(Handover(member, target) if isinstance(target, table.Target) else _group(member, target))
    return built


@click.group(cls=Sectioned, context_settings=CONTEXT)
@click.version_option(package_name="vetted", prog_name=PROG, message="%(prog)s %(version)s")
def cli() -> None:
    """Vetted: memory for AI agents in which nothing becomes true until a person approves it.

    Start with `vetted serve`, open the address it prints, then `vetted connect CLIENT --agent NAME`.
    Every command answers --help; `vetted completion bash` prints shell completion.
    """


for _name, _target in table.COMMANDS.items():
    cli.add_command(Handover(_name, _target))
for _name, _group_spec in table.GROUPS.items():
    cli.add_command(_group(_name, _group_spec))


@cli.command(context_settings=CONTEXT)
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to listen on")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535), help="the port")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="processes (PostgreSQL only)")
@click.option("--background", is_flag=True, help="detach: keep serving after this terminal closes (log in VETTED_HOME)")
def serve(host: str, port: int, workers: int, background: bool) -> None:
    """Run Vetted: the review site, the REST API and MCP on one port.

    Applies any database migrations first. Refuses at once when Vetted already runs for this
    VETTED_HOME (exit code 4) or the port is taken (exit code 1). With --background it detaches, writes its log to
    VETTED_HOME/daemon.log and returns once it answers; `vetted status` and `vetted stop` follow it.
    """
    from common import listening

    from . import daemon

    home = daemon.vetted_home()
    say = _say
    try:
        if background:
            url, pid = daemon.start_background(home, host, port, workers, say, interactive=sys.stderr.isatty())
            for line in daemon.started_lines(home):
                say(line)
            say(f"Vetted runs in the background at {url}/ (pid {pid}); log: {home / daemon.LOG_FILE}.")
            say("`vetted status` shows it; `vetted stop` stops it.")
            return
        listening.refuse_if_running(home, host, port, note=say)
    except listening.AlreadyServing as exc:
        record = listening.read(home)
        if record is not None and record.alive and record.port == port:
            # Vetted runs here already: not a failure, but not a start either.
            say(f"Error: {exc}")
            sys.exit(daemon.ALREADY_RUNNING)
        raise click.ClickException(str(exc)) from None
    except daemon.StartFailed as exc:
        raise click.ClickException(str(exc)) from None

    from . import run

    run.setup()
    run.migrate_if_needed()
    run.run_command(
        "serve", f"{PROG} serve", ["--host", host, "--port", str(port), "--workers", str(workers)], all_checks=True
    )


@cli.command(context_settings=CONTEXT, short_help="Whether Vetted runs, where, and its health.")
def status() -> None:
    """Whether Vetted runs for this VETTED_HOME: where, since when, its health (exit 3 if not running)."""
    from . import daemon

    sys.exit(daemon.status(daemon.vetted_home(), _say_out))


@cli.command(context_settings=CONTEXT, short_help="Stop Vetted (however it was started).")
@click.option("--timeout", default=30.0, show_default=True, type=float, help="seconds to wait for it to finish")
def stop(timeout: float) -> None:
    """Stop this VETTED_HOME's Vetted (started by serve, --background, or a stdio client)."""
    from . import daemon

    sys.exit(daemon.stop(daemon.vetted_home(), _say_out, timeout=timeout))


@cli.group(context_settings=CONTEXT, short_help="Start Vetted at log-in: a systemd or launchd user service.")
def service() -> None:
    """A user service that runs `vetted serve` at log-in and restarts it if it fails, so HTTP clients
    keep working after every terminal is closed (`vetted serve --background` lasts until log-out)."""


@service.command("install", context_settings=CONTEXT)
@click.option("--systemd", "kind", flag_value="systemd", help="a systemd user unit (the default on Linux)")
@click.option("--launchd", "kind", flag_value="launchd", help="a launchd agent (the default on macOS)")
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to listen on")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535), help="the port")
@click.option("--force", is_flag=True, help="replace a different file already at that path")
@click.option("--print", "show", is_flag=True, help="print the file instead of writing it")
def service_install(kind: str | None, host: str, port: int, force: bool, show: bool) -> None:
    """Write the user service file for this VETTED_HOME and this Python, then print how to enable it.

    Never replaces a different existing file without --force; writing the same file again changes
    nothing. Stop a `vetted serve` that runs for this VETTED_HOME before enabling the service.
    """
    from . import daemon
    from . import service as services

    try:
        wanted = services.service(kind or services.default_kind(), daemon.vetted_home(), host, port)
        if show:
            click.echo(wanted.text, nl=False)
            return
        done = services.install(wanted, force=force)
    except services.ServiceError as exc:
        raise click.ClickException(str(exc)) from None
    _say_out(
        f"The {wanted.kind} service file {wanted.path} is as it should be; nothing changed."
        if done == "unchanged"
        else f"{'Replaced' if done == 'replaced' else 'Wrote'} the {wanted.kind} service file {wanted.path}."
    )
    _say_out("Enable it (it starts now and at each log-in):")
    for line in wanted.enable:
        _say_out(f"  {line}")
    _say_out("`vetted status` then shows it; `vetted stop` stops it until the next log-in;")
    _say_out(f"`{wanted.disable}` switches it off for good.")


@cli.command(context_settings=CONTEXT, short_help="Print shell completion (bash, zsh, fish).")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print shell completion for vetted, e.g. eval "$(vetted completion bash)" in ~/.bashrc."""
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # the three choices are click's own
    click.echo(completer(cli, {}, PROG, "_VETTED_COMPLETE").source())


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
    short_help="Django's own commands: migrate, createsuperuser, check, ...",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def manage(args: tuple[str, ...]) -> None:
    """Django's own commands (migrate, createsuperuser, check, shell, ...), as manage.py runs them."""
    from .run import run_django

    run_django(f"{PROG} manage", list(args))


def _say(text: str) -> None:
    click.echo(text, err=True)


def _say_out(text: str) -> None:
    click.echo(text)


def main() -> None:
    cli.main(prog_name=PROG, complete_var="_VETTED_COMPLETE")
