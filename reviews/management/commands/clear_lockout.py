from django.core.management.base import BaseCommand, CommandError

from common.cli import resolve_reviewer
from reviews import actions, lockouts
from reviews.errors import VettedError


class Command(BaseCommand):
    help = (
        "List sign-in lockouts, or clear the one of a username or an address "
        "(audited, like the Clear button on the Settings page)."
    )

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument(
            "--list",
            action="store_true",
            help="show every (username, address) pair locked and every username slowed down now",
        )
        which.add_argument("--username", help="forget this username's failed sign-ins (from any address)")
        which.add_argument("--address", help="forget this address's failed sign-ins (on any username)")
        parser.add_argument("--reviewer", help="the person clearing it (default: the only superuser)")

    def handle(self, *args, **opts):
        if opts["list"]:
            found = lockouts.current()
            for lockout in found:
                if lockout.kind == "pair":
                    what, state = f"username {lockout.username} from address {lockout.address}", "locked"
                else:
                    what, state = f"username {lockout.username} (from all addresses)", "slowed down"
                self.stdout.write(
                    f"{what}: {lockout.failures} failed attempts, {state} until {lockout.until:%Y-%m-%d %H:%M:%S %Z}"
                )
            if not found:
                self.stdout.write("No username or address is locked out.")
            return
        reviewer = resolve_reviewer(opts["reviewer"])
        try:
            removed = actions.clear_login_lockout(
                actor=reviewer, username=opts["username"] or "", address=opts["address"] or ""
            )
        except VettedError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"Cleared the sign-in lockout of {opts['username'] or opts['address']} "
            f"({removed} failed attempt record(s) removed)."
        )
