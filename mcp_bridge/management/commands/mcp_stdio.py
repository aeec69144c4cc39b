from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "The MCP stdio bridge that Claude Desktop/Code, Codex and Cursor spawn: relays MCP messages between "
        "stdio and the running daemon's /mcp with the agent's token (VETTED_TOKEN, VETTED_TOKEN_FILE or "
        "~/.config/vetted/bridge.json), starting the daemon if it is not running (VETTED_AUTOSTART=0 turns "
        "that off). `manage.py mcp_stdio` runs it without Django's setup; the console script is `vetted-mcp`."
    )

    def handle(self, *args, **options):
        from mcp_bridge.stdio.bridge import main

        raise SystemExit(main([]))
