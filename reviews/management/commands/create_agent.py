from django.core.management.base import BaseCommand, CommandError

from common.cli import resolve_reviewer
from reviews import actions
from reviews.errors import VettedError


class Command(BaseCommand):
    help = "Create an agent and print its token once (the last line is the token alone)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="lowercase name, e.g. claude-code-laptop")
        parser.add_argument("--spaces", required=True, help="comma separated: personal,team,system")
        parser.add_argument("--source-tool", default="", help="the client this agent runs in, e.g. claude-code")
        parser.add_argument("--reviewer", help="the person creating it (default: the only superuser)")

    def handle(self, *args, **opts):
        reviewer = resolve_reviewer(opts["reviewer"])
        spaces = [s for s in opts["spaces"].split(",") if s.strip()]
        try:
            agent, token = actions.create_agent(
                opts["name"], spaces=spaces, actor=reviewer, source_tool=opts["source_tool"]
            )
        except VettedError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(f"Created agent {agent.name} ({agent.public_id}) with spaces {', '.join(agent.spaces)}.")
        self.stderr.write("The token below is shown only this once; store it now. Vetted keeps only its digest.")
        self.stdout.write(token)
