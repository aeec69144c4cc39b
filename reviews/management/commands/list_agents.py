from typing import Any

from django.core.management.base import BaseCommand

from common.cli import dumps
from reviews.models import Agent


class Command(BaseCommand):
    help = (
        "List the agents: name, id, the spaces granted, the client, the token's first characters, when it was "
        "last seen, and whether it is revoked. Tokens themselves are never shown (only digests are kept)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="include revoked agents")
        parser.add_argument("--json", action="store_true", help="one JSON object per line")

    def handle(self, *args, **opts):
        agents = Agent.objects.order_by("name")
        if not opts["all"]:
            agents = agents.filter(is_active=True)
        rows: list[dict[str, Any]] = [
            {
                "name": agent.name,
                "id": agent.public_id,
                "spaces": agent.grants,
                "source_tool": agent.source_tool,
                "token_prefix": agent.token_prefix,
                "last_seen_at": agent.last_seen_at.isoformat(timespec="seconds") if agent.last_seen_at else None,
                "active": agent.is_active,
            }
            for agent in agents
        ]
        if opts["json"]:
            for row in rows:
                self.stdout.write(dumps(row))
            return
        if not rows:
            self.stdout.write("No agents yet. Create one: vetted connect CLIENT --agent NAME (or vetted agent create).")
            return
        for row in rows:
            seen = row["last_seen_at"] or "never"
            state = "" if row["active"] else "  REVOKED"
            tool = f"  {row['source_tool']}" if row["source_tool"] else ""
            self.stdout.write(
                f"{row['name']}  {row['id']}  spaces {','.join(row['spaces']) or '-'}{tool}  "
                f"token {row['token_prefix'] or '-'}…  last seen {seen}{state}"
            )
