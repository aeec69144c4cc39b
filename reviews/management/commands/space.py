"""manage.py space: spaces, their members and agents' grants.

Run on the server by its operator, so it acts as the SystemActor
"manage.py space" (or as --as USERNAME, checked as that person: an owner
manages members, an agent's person changes its grants). Every change is an
action, audited.
"""

from django.core.management.base import BaseCommand, CommandError

from common.cli import dumps, resolve_reviewer
from reviews import actions
from reviews.errors import VettedError
from reviews.models import Agent
from reviews.space_models import ROLES, Membership, Space

OPERATOR = actions.SystemActor("manage.py space")


class Command(BaseCommand):
    help = (
        "Spaces, members and agent grants: `space list`, `space create SLUG --kind team --name N --owner U`, "
        "`space add-member SLUG USER --role reviewer`, `space remove-member SLUG USER`, "
        "`space approvals SLUG 2`, `space grant AGENT SLUG`, `space revoke AGENT SLUG`."
    )

    def add_arguments(self, parser):
        parser.add_argument("--as", dest="as_user", default="", help="act as this person instead of the operator")
        sub = parser.add_subparsers(dest="command", required=True)
        p = sub.add_parser("list", help="every space with its members, roles and granted agents")
        p.add_argument("--json", action="store_true")
        p = sub.add_parser("create", help="create a team space (or a personal one: --kind personal --owner U)")
        p.add_argument("slug", nargs="?", default="", help="e.g. acme (personal: left out, personal:<owner>)")
        p.add_argument("--kind", choices=["team", "personal"], default="team")
        p.add_argument("--name", required=True)
        p.add_argument("--owner", required=True, help="the account that owns it")
        p.add_argument("--approvals", type=int, default=1, help="required approvals, 1 or 2 (team only)")
        p = sub.add_parser("add-member", help="add a member, or change a member's role")
        p.add_argument("slug")
        p.add_argument("user")
        p.add_argument("--role", choices=ROLES, required=True)
        p = sub.add_parser("remove-member", help="remove a member (their agents lose this space)")
        p.add_argument("slug")
        p.add_argument("user")
        p = sub.add_parser("approvals", help="how many different reviewers must accept (1 or 2)")
        p.add_argument("slug")
        p.add_argument("count", type=int)
        for name, what in (("grant", "grant an agent a space of its person's"), ("revoke", "take a space from it")):
            p = sub.add_parser(name, help=what)
            p.add_argument("agent")
            p.add_argument("slug")

    def handle(self, *args, **opts):
        actor = OPERATOR
        if opts["as_user"]:
            actor = resolve_reviewer(opts["as_user"])
        command = opts["command"]
        try:
            if command == "list":
                return self._list(opts["json"])
            if command == "create":
                space = actions.create_space(
                    opts["slug"],
                    kind=opts["kind"],
                    name=opts["name"],
                    owner=opts["owner"],
                    required_approvals=opts["approvals"],
                    actor=actor,
                )
                self.stdout.write(f"Created {space.kind} space {space.slug} ({space.name}), owner {opts['owner']}.")
            elif command == "add-member":
                m = actions.add_member(opts["slug"], opts["user"], role=opts["role"], actor=actor)
                self.stdout.write(f"{opts['user']} is now a {m.role} of {opts['slug']}.")
            elif command == "remove-member":
                narrowed = actions.remove_member(opts["slug"], opts["user"], actor=actor)
                lost = f"; agents that lost it: {', '.join(narrowed)}" if narrowed else ""
                self.stdout.write(f"Removed {opts['user']} from {opts['slug']}{lost}.")
            elif command == "approvals":
                space = actions.set_required_approvals(opts["slug"], opts["count"], actor=actor)
                self.stdout.write(f"{space.slug} now needs {space.required_approvals} approval(s).")
            elif command in ("grant", "revoke"):
                change = actions.grant_space if command == "grant" else actions.revoke_space
                agent = change(opts["agent"], opts["slug"], actor=actor)
                self.stdout.write(f"Agent {agent.name} now has: {', '.join(agent.spaces)}.")
        except VettedError as exc:
            raise CommandError(exc.message) from None
        return None

    def _list(self, as_json: bool) -> None:
        rows: list[dict] = []
        for space in Space.objects.order_by("kind", "slug"):
            members = Membership.objects.filter(space=space).select_related("user").order_by("user__username")
            agents = [a.name for a in Agent.objects.order_by("name") if space.slug in a.spaces]
            rows.append(
                {
                    "slug": space.slug,
                    "kind": space.kind,
                    "name": space.name,
                    "required_approvals": space.required_approvals,
                    "members": {m.user.get_username(): m.role for m in members},
                    "agents": agents,
                }
            )
        if as_json:
            self.stdout.write(dumps(rows))
            return
        for row in rows:
            listed = ", ".join(f"{u} ({r})" for u, r in row["members"].items()) or "no members"
            self.stdout.write(
                f"{row['slug']:<24} {row['kind']:<8} {row['name']}  approvals: {row['required_approvals']}  "
                f"members: {listed}  agents: {', '.join(row['agents']) or 'none'}"
            )
        if not rows:
            raise CommandError("No spaces (run `manage.py migrate`).")
