from django.core.management.base import BaseCommand, CommandError

from common.cli import resolve_reviewer
from reviews import actions
from reviews.errors import VettedError


class Command(BaseCommand):
    help = (
        "Give an agent a new token and print it once (the last line is the token alone); the old token stops "
        "working at once. Put the new one where the client reads it (`connect CLIENT --agent NAME --rotate` "
        "prints the whole config block instead)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--reviewer", help="the person rotating it (default: the only superuser)")

    def handle(self, *args, **opts):
        reviewer = resolve_reviewer(opts["reviewer"])
        try:
            agent, token = actions.rotate_agent_token(opts["name"].strip().lower(), actor=reviewer)
        except VettedError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(f"Issued a new token for {agent.name} ({agent.public_id}); the old one no longer works.")
        self.stderr.write("The token below is shown only this once; store it now. Vetted keeps only its digest.")
        self.stdout.write(token)
