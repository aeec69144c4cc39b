from django.core.management.base import BaseCommand, CommandError

from common.cli import resolve_reviewer
from reviews import actions
from reviews.errors import VettedError


class Command(BaseCommand):
    help = "Revoke an agent: its token stops working at once; its proposals and records stay."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--reviewer", help="the person revoking it (default: the only superuser)")

    def handle(self, *args, **opts):
        reviewer = resolve_reviewer(opts["reviewer"])
        try:
            agent = actions.revoke_agent(opts["name"], actor=reviewer)
        except VettedError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Revoked agent {agent.name} ({agent.public_id}).")
