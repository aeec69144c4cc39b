import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from common import listening
from common.cli import resolve_reviewer
from mcp_bridge import connect
from reviews import actions
from reviews.errors import Unauthorized, VettedError
from reviews.models import Agent


class Command(BaseCommand):
    help = (
        "Connect an MCP client: create (or reuse) an agent token and print the exact config block for "
        f"{', '.join(connect.CLIENTS)}, plus the instruction text for the client's global instructions. "
        "--write merges the block into the client's config file (after a backup). --both writes the stdio and "
        "the HTTP entries with one token."
    )

    def add_arguments(self, parser):
        parser.add_argument("client", choices=sorted(connect.CLIENTS))
        parser.add_argument("--agent", required=True, help="agent name, e.g. claude-code-laptop (created if missing)")
        parser.add_argument(
            "--spaces",
            default="personal,team",
            help="spaces for a new agent (default personal,team); ignored for an existing one",
        )
        reuse = parser.add_mutually_exclusive_group()
        reuse.add_argument(
            "--token", help="an existing agent's token (Vetted keeps only digests, so it cannot print an old token)"
        )
        reuse.add_argument(
            "--rotate", action="store_true", help="give an existing agent a new token (the old one stops working)"
        )
        transport = parser.add_mutually_exclusive_group()
        transport.add_argument(
            "--http", action="store_true", help="connect over HTTP to /mcp instead of spawning the stdio bridge"
        )
        transport.add_argument(
            "--both",
            action="store_true",
            help="both entries with one token: 'vetted' (stdio, starts the daemon itself) and 'vetted-http'",
        )
        parser.add_argument(
            "--url",
            default="",
            help="the daemon's base URL (default: where the running `serve` of this VETTED_HOME listens, "
            "from VETTED_HOME/serve.json, else http://127.0.0.1:8765)",
        )
        parser.add_argument("--write", action="store_true", help="merge into the client's config file")
        parser.add_argument("--config", help="the config file to write (default: the client's usual file)")
        parser.add_argument("--reviewer", help="the person creating the agent (default: the only superuser)")

    def handle(self, *args, **opts):
        client = connect.CLIENTS[opts["client"]]
        url = (opts["url"] or self._running_url() or connect.DEFAULT_URL).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--url {url!r}: give an http(s) URL such as {connect.DEFAULT_URL}.")
        name = opts["agent"].strip().lower()
        if opts["write"] and client.name == "generic" and not opts["config"]:
            raise CommandError("connect generic --write needs --config PATH: a generic client has no usual file.")
        target = Path(opts["config"]).expanduser() if opts["config"] else None
        if opts["write"]:
            target = target or client.config_path()
            try:
                connect.check_target(client, target)
            except (connect.ConnectError, OSError) as exc:
                raise CommandError(f"Will not write {target}: {exc}") from None
        transports = [False, True] if opts["both"] else [opts["http"]]
        if True in transports and not client.http:
            flag = "--both" if opts["both"] else "--http"
            raise CommandError(
                f"{client.label} cannot send a bearer header to a remote server; it connects through the stdio "
                f"bridge only (drop {flag})."
            )
        token = self._token(name, opts, client)
        home = Path(settings.VETTED_HOME).resolve()
        try:
            entries = [connect.server_entry(client, token=token, url=url, home=home, http=http) for http in transports]
        except connect.ConnectError as exc:
            raise CommandError(str(exc)) from None

        servers = ", ".join(f"'{connect.name_for(entry)}'" for entry in entries)
        names = "server names" if len(entries) > 1 else "server name"
        self.stdout.write(f"# {client.label}: add this to {target or client.target_text()} ({names} {servers})")
        self.stdout.write(connect.render(client, *entries))
        commands = [command for entry in entries if (command := connect.cli_command(client, entry))]
        if commands:
            self.stdout.write("\n# or run:\n" + "\n".join(commands))
        if client.name == "codex" and True in transports:
            self.stdout.write("\n" + connect.codex_token_help(token, os.environ.get("SHELL", "")))
        self.stdout.write("\n# Paste into the client's global instructions (e.g. CLAUDE.md, AGENTS.md):")
        self.stdout.write(connect.GLOBAL_INSTRUCTIONS)

        if opts["write"]:
            try:
                path, backup = connect.merge_into(client, entries, target)  # target is set when writing
            except (connect.ConnectError, OSError) as exc:
                raise CommandError(f"Could not write {target}: {exc}") from None
            saved = f" (previous version saved as {backup})" if backup else ""
            plural = "s" if len(entries) > 1 else ""
            self.stderr.write(f"Wrote the {servers} server{plural} into {path}{saved}. Restart {client.label}.")
        self.stderr.write(self._rotation_hint(client.name, name, opts))

    @staticmethod
    def _rotation_hint(client: str, name: str, opts) -> str:
        transport = " --both" if opts["both"] else " --http" if opts["http"] else ""
        write = " --write" if opts["write"] else ""
        return (
            f"To replace this token later (say it leaked, or to add an entry): vetted connect {client} --agent {name} "
            f"--rotate{transport}{write}; the old token stops working at once. `vetted agent revoke {name}` "
            "switches the agent off."
        )

    def _running_url(self) -> str | None:
        """Where this VETTED_HOME's daemon listens, from the record `serve` keeps."""
        record = listening.running(settings.VETTED_HOME)
        if record is None:
            return None
        if record.url != connect.DEFAULT_URL:
            self.stderr.write(f"Vetted serves this VETTED_HOME at {record.url} (pid {record.pid}, {record.path}).")
        return record.url

    def _token(self, name: str, opts, client) -> str:
        agent = Agent.objects.filter(name=name).first()
        try:
            if agent is None:
                if opts["token"] or opts["rotate"]:
                    raise CommandError(f"No agent named {name!r}; leave out --token/--rotate to create it.")
                reviewer = resolve_reviewer(opts["reviewer"])
                spaces = [s for s in opts["spaces"].split(",") if s.strip()]
                agent, token = actions.create_agent(name, spaces=spaces, actor=reviewer, source_tool=client.name)
                self.stderr.write(
                    f"Created agent {agent.name} ({agent.public_id}) with spaces "
                    f"{', '.join(agent.spaces)}; its token is in the block below (shown only now)."
                )
                return token
            if opts["rotate"]:
                agent, token = actions.rotate_agent_token(agent, actor=resolve_reviewer(opts["reviewer"]))
                self.stderr.write(f"Issued a new token for {agent.name}; the old one no longer works.")
                return token
            if opts["token"]:
                owner = actions.agent_for_token(opts["token"])
                if owner.pk != agent.pk:
                    raise CommandError(f"That token belongs to agent {owner.name!r}, not {name!r}.")
                return opts["token"].strip()
        except (Unauthorized, VettedError) as exc:
            raise CommandError(exc.message) from None
        raise CommandError(
            f"Agent {name!r} exists, and Vetted keeps only a digest of its token, so it cannot print it again. "
            "Pass --token vt_... (the token you saved), or --rotate to issue a new one (the old one stops working), "
            "or choose a new --agent name. To add the other transport's entry, pass --both with either: one token "
            "serves the stdio and the HTTP entries."
        )
