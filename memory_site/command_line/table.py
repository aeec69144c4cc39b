"""Which management command each `vetted` subcommand runs, and the one line
`vetted GROUP --help` shows for it (read without importing the command, so
listing a group costs no Django start)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    command: str  # the management command that does the work
    summary: str
    words: tuple[str, ...] = ()  # its own subcommands, for shell completion


# Top-level commands that hand over whole (their own subcommands included).
COMMANDS: dict[str, Target] = {
    "connect": Target(
        "connect",
        "Connect an MCP client (claude-code, claude-desktop, codex, cursor, generic): token and config block.",
        ("claude-code", "claude-desktop", "codex", "cursor", "generic"),
    ),
    "review": Target(
        "review",
        "The terminal reviewer: list proposals, accept, reject, retire, verify, undo, move; accounts.",
        (
            "list",
            "show",
            "accept",
            "reject",
            "retire",
            "verify",
            "keep-record",
            "undo",
            "decisions",
            "move",
            "restore",
            "approve-current",
            "account",
        ),
    ),
    "records": Target(
        "records", "List or read approved records as an agent of some spaces receives them.", ("list", "read")
    ),
    "search": Target("search", "Search approved memory with the engine and gate agents use."),
    "quality": Target("quality", "Report what looks wrong in the memory, with the next step for each."),
    "space": Target(
        "space",
        "Spaces, members and agent grants: list, create, add-member, remove-member, approvals, grant, revoke.",
        ("list", "create", "add-member", "remove-member", "approvals", "grant", "revoke"),
    ),
    "lockouts": Target("clear_lockout", "List sign-in lockouts, or clear one (--list, --username U, --address A)."),
    "notify": Target("notify", "Send pending notifications (the daemon does this itself; --once for cron)."),
    "vault": Target(
        "vault", "Keep a folder of Markdown notes (an Obsidian vault) in step with a person's approved memory."
    ),
}

# Groups of commands: a summary and, per name, a management command or a group.
Group = tuple[str, dict[str, "Target | Group"]]

GROUPS: dict[str, Group] = {
    "agent": (
        "Agents: the tokens MCP and REST clients use.",
        {
            "create": Target("create_agent", "Create an agent and print its token once."),
            "list": Target("list_agents", "List agents: name, id, spaces, token prefix, last seen, revoked."),
            "rotate": Target("rotate_agent", "Give an agent a new token (the old one stops working at once)."),
            "revoke": Target("revoke_agent", "Revoke an agent: its token stops working; its proposals stay."),
        },
    ),
    "data": (
        "Backups, exports and imports, and moving to PostgreSQL.",
        {
            "backup": Target("backup", "Copy the live database (safe while Vetted runs) and check the copy."),
            "restore": Target("restore", "Replace the database with a backup (Vetted must be stopped)."),
            "export": (
                "Write records out: one JSON document (everything) or Markdown notes (approved records).",
                {
                    "json": Target("export_json", "Write everything to one JSON document (vetted-export)."),
                    "markdown": Target("export_markdown", "Write approved records as Markdown notes, one file each."),
                },
            ),
            "import": (
                "Bring records in: a vetted-export JSON document, Markdown notes, or JSON Lines.",
                {
                    "json": Target("import_json", "Load a vetted-export JSON document into an empty instance."),
                    "markdown": Target(
                        "import_markdown", "Import Markdown notes, CLAUDE.md or AGENTS.md files as proposals."
                    ),
                    "records": Target("import_records", "Import records from a JSON Lines file as proposals."),
                },
            ),
            "copy-to-postgres": Target("copy_database", "Copy this instance from SQLite into an empty PostgreSQL."),
            "pg-roles": Target("pg_roles", "PostgreSQL: make the write log append-only for the application's role."),
        },
    ),
    "instructions": (
        "Your AI tools' instruction files (CLAUDE.md, AGENTS.md, ...): import them, keep them in step.",
        {
            "import": Target(
                "import_instructions",
                "Import instruction files (CLAUDE.md, AGENTS.md, Cursor rules, ...) as proposals.",
            ),
            "publish": Target(
                "publish",
                "Keep a block of approved records in the files your AI tools read (--watch to follow).",
            ),
        },
    ),
    "index": (
        "The search indexes (keywords and vectors).",
        {
            "check": Target("check_index", "Compare the indexes with the records; exit non-zero if anything is off."),
            "rebuild": Target("reindex", "Rebuild the keyword indexes and every vector."),
        },
    ),
}

# How `vetted --help` lists the commands: by what a person wants to do.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Run Vetted", ("serve", "status", "stop", "service", "connect")),
    ("Review and read", ("review", "records", "search", "quality")),
    ("Agents, spaces, people", ("agent", "space", "lockouts")),
    ("Files your tools read", ("instructions", "vault")),
    ("Data", ("data", "index", "notify")),
    ("More", ("completion", "manage")),
)


# The management commands of Vetted's own apps that are not `vetted`
# commands, and why (tests/test_command_line.py fails on a command that is
# in neither list). They stay runnable as `manage.py NAME`.
NOT_VETTED: dict[str, str] = {
    "serve": "`vetted serve` is the tool's own command: it refuses at once when Vetted runs, then hands over",
    "mcp_stdio": "what an MCP client starts (the `vetted-mcp` script), not something a person types",
    "stress": "development: the whole-machine stress run",
    "eval_retrieval": "development: retrieval quality against the evaluation set",
    **{
        name: "development: a benchmark"
        for name in (
            "bench_activity",
            "bench_bridge_start",
            "bench_cli",
            "bench_compare",
            "bench_edited_count",
            "bench_gateway",
            "bench_inbox",
            "bench_locomo",
            "bench_models",
            "bench_notify",
            "bench_review",
            "bench_search",
            "bench_stages",
        )
    },
}


def handovers() -> list[tuple[list[str], Target]]:
    """Every `vetted` command that hands over, as typed (["data", "export", "json"])."""

    def walk(prefix: list[str], group: Group):
        for name, member in group[1].items():
            if isinstance(member, Target):
                yield [*prefix, name], member
            else:
                yield from walk([*prefix, name], member)

    found = [([name], target) for name, target in COMMANDS.items()]
    for name, group in GROUPS.items():
        found += walk([name], group)
    return found
