import argparse

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from common import textsafety
from common.cli import dumps, iso_date, resolve_reviewer
from reviews import actions, vocabulary
from reviews.errors import VettedError
from reviews.models import AuditEvent, Proposal, ProposalState


class Command(BaseCommand):
    help = (
        "The terminal reviewer: list proposals and decide them, retire, verify, keep disputed records, undo, move, "
        "settle records changed outside Vetted (restore, approve-current); change accounts."
    )

    def add_arguments(self, parser):
        reviewer_help = "who decides (default: $VETTED_REVIEWER or the only superuser)"
        parser.add_argument("--reviewer", help=reviewer_help)
        # Also accepted after the subcommand; SUPPRESS keeps the subparser's
        # default from overwriting a value given before it.
        common = argparse.ArgumentParser(add_help=False)
        common.add_argument("--reviewer", default=argparse.SUPPRESS, help=reviewer_help)
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        p = sub.add_parser("list", parents=[common], help="list proposals (oldest first)")
        p.add_argument("--state", default="pending", choices=[s.value for s in ProposalState] + ["all"])
        p.add_argument("--limit", type=int, default=100)
        p.add_argument("--json", action="store_true", help="one JSON object per line")

        p = sub.add_parser("show", parents=[common], help="show one proposal in full")
        p.add_argument("id")

        p = sub.add_parser("accept", parents=[common], help="accept a proposal as proposed")
        p.add_argument("id")
        p.add_argument("--note", default="")

        p = sub.add_parser("reject", parents=[common], help="reject a proposal; the note is shown to the agent")
        p.add_argument("id")
        p.add_argument("--note", required=True)

        p = sub.add_parser("retire", parents=[common], help="retire a record")
        p.add_argument("record_id")
        p.add_argument("--note", required=True)

        p = sub.add_parser("verify", parents=[common], help="confirm a record still holds; sets a new review date")
        p.add_argument("record_id")
        p.add_argument("--review-by", type=iso_date, help="YYYY-MM-DD (default: today + the kind's period)")

        # The shared dispute vocabulary (reviews/vocabulary.py).
        p = sub.add_parser("keep-record", parents=[common], help=f"Keep record: {vocabulary.MEANINGS[vocabulary.KEEP]}")
        p.add_argument("record_id")
        p.add_argument("--note", default="", help="shown to the agents that disputed it")

        p = sub.add_parser(
            "undo",
            parents=[common],
            help="undo your own decision (within VETTED_UNDO_SECONDS): a proposal id, or a decision number "
            "from `review decisions`",
        )
        p.add_argument("decision")
        p = sub.add_parser("decisions", parents=[common], help="your recent decisions, newest first (for undo)")
        p.add_argument("--limit", type=int, default=20)

        p = sub.add_parser(
            "move", parents=[common], help="move a record to another space; the moved version supersedes it"
        )
        p.add_argument("record_id")
        p.add_argument("--space", "--space", required=True, dest="space", help="the destination space (slug)")
        p.add_argument("--note", required=True, help="why it belongs there")

        p = sub.add_parser(
            "restore", parents=[common], help="put back the approved text of a record changed outside Vetted"
        )
        p.add_argument("record_id")
        p.add_argument("--note", default="")

        p = sub.add_parser(
            "approve-current",
            parents=[common],
            help="approve the text a record changed outside Vetted holds now: a new approved version supersedes it",
        )
        p.add_argument("record_id")
        p.add_argument("--note", required=True, help="why the current text is right")

        p = sub.add_parser(
            "account",
            parents=[common],
            help="change a user account (superusers only; audited): staff status, deactivate, activate",
        )
        account = p.add_subparsers(dest="account_command", required=True, metavar="CHANGE")
        staff = account.add_parser("staff", parents=[common], help="make USERNAME a reviewer (staff) or not")
        staff.add_argument("username")
        on_off = staff.add_mutually_exclusive_group(required=True)
        on_off.add_argument("--on", dest="is_staff", action="store_true", help="may sign in to the site and decide")
        on_off.add_argument("--off", dest="is_staff", action="store_false", help="may no longer")
        for name, text in (("deactivate", "USERNAME can no longer sign in or decide"), ("activate", "undo deactivate")):
            account.add_parser(name, parents=[common], help=text).add_argument("username")

    def handle(self, *args, **opts):
        command = opts["subcommand"]
        if command == "list":
            return self._list(opts)
        if command == "show":
            return self._show(opts["id"])
        reviewer = resolve_reviewer(opts["reviewer"])
        try:
            if command == "accept":
                p = actions.accept_proposal(opts["id"], actor=reviewer, note=opts["note"])
                made = p.result_record
                result = f" -> {made.public_id} ({made.status})" if made is not None else ""
                self.stdout.write(f"Accepted {p.public_id} ({p.action}){result}.{_named(p)}")
            elif command == "reject":
                p = actions.reject_proposal(opts["id"], actor=reviewer, note=opts["note"])
                self.stdout.write(f"Rejected {p.public_id} ({p.action}).{_named(p)}")
            elif command == "retire":
                r = actions.retire_record(opts["record_id"], actor=reviewer, note=opts["note"])
                self.stdout.write(f"Retired {r.public_id}: {r.title}.")
            elif command == "verify":
                r = actions.verify_record(opts["record_id"], actor=reviewer, review_by=opts["review_by"])
                self.stdout.write(f"Verified {r.public_id}; next review by {r.review_by}.")
            elif command == "keep-record":
                r = actions.clear_dispute(opts["record_id"], actor=reviewer, note=opts["note"])
                still = (
                    (
                        " Agents still do not receive it: its text was changed outside Vetted "
                        f"(review restore {r.public_id}, or review approve-current)."
                    )
                    if r.edited_since_approval
                    else ""
                )
                kept = vocabulary.DONE[vocabulary.KEEP]
                self.stdout.write(
                    f"{kept} {r.public_id}: {r.title}. Its disputes were rejected; it is approved again.{still}"
                )
            elif command == "undo":
                event = actions.undo_decision(opts["decision"], actor=reviewer)
                undone = vocabulary.DONE[vocabulary.event_outcome(event.extra["undoes_event"], event.extra)]
                retired = f" {event.extra['retired']} is retired (undone)." if "retired" in event.extra else ""
                self.stdout.write(f"Undone: {undone.lower()} {event.snippet}.{retired}")
            elif command == "decisions":
                self._decisions(reviewer, opts["limit"])
            elif command == "account":
                self._account(opts, reviewer)
            elif command == "move":
                r = actions.move_record(opts["record_id"], actor=reviewer, space=opts["space"], note=opts["note"])
                self.stdout.write(f"Moved {opts['record_id']} to {r.space} as {r.public_id}.")
            elif command == "restore":
                r = actions.restore_approved_text(opts["record_id"], actor=reviewer, note=opts["note"])
                self.stdout.write(f"Restored the approved text of {r.public_id}: {r.title}.")
            elif command == "approve-current":
                r = actions.approve_current_text(opts["record_id"], actor=reviewer, note=opts["note"])
                self.stdout.write(f"Approved the current text of {opts['record_id']} as {r.public_id}.")
        except VettedError as exc:
            raise CommandError(exc.message) from None

    def _account(self, opts, reviewer):
        change, name = opts["account_command"], opts["username"]
        if change == "staff":
            user = actions.set_account_staff(name, actor=reviewer, is_staff=opts["is_staff"])
            done = "is now a reviewer (staff)" if user.is_staff else "is no longer a reviewer (staff)"
        elif change == "deactivate":
            actions.deactivate_account(name, actor=reviewer)
            done = "is deactivated"
        else:
            actions.activate_account(name, actor=reviewer)
            done = "is active again"
        self.stdout.write(f"User {name!r} {done}.")

    def _decisions(self, reviewer, limit):
        events = AuditEvent.objects.filter(
            actor_type="user", actor=reviewer.get_username(), event_type__in=actions.DECISION_EVENTS
        ).order_by("-id")[:limit]
        undone = actions.undone_events([e.pk for e in events])
        for e in events:
            done = vocabulary.DONE[vocabulary.event_outcome(e.event_type, e.extra)]
            allowed = e.pk not in undone and actions.undo_refusal(e, actor=reviewer) is None
            state = "undone" if e.pk in undone else ("can undo" if allowed else "")
            ref = e.proposal_ref or e.subject_id
            self.stdout.write(f"{e.pk:>6}  {e.at:%Y-%m-%d %H:%M:%S}  {done:<16} {ref}  {e.snippet}  {state}".rstrip())

    def _list(self, opts):
        qs = Proposal.objects.select_related("agent", "target").order_by("created_at", "id")
        if opts["state"] != "all":
            qs = qs.filter(state=opts["state"])
        rows = list(qs[: opts["limit"]])
        now = timezone.now()
        if opts["json"]:
            for p in rows:
                self.stdout.write(dumps(_as_dict(p)))
            return
        if not rows:
            self.stdout.write(f"No {opts['state']} proposals.")
            return
        for p in rows:
            on = p.target
            target = f" on {on.public_id}" if on is not None else ""
            title = textsafety.mark_plain(p.title or (on.title if on is not None else ""))
            space = p.space or (on.space if on is not None else "")
            age = _age(now - p.created_at)
            self.stdout.write(
                f"{p.public_id}  {p.state:<9} {p.action:<7}{target}  [{space}] {title}  ({p.proposer_label}, {age})"
            )

    def _show(self, public_id):
        p = Proposal.objects.select_related("agent", "target").filter(public_id=public_id).first()
        if p is None:
            raise CommandError(f"No proposal with id {public_id!r}.")
        self.stdout.write(dumps(_as_dict(p, full=True)))


def _named(p: Proposal) -> str:
    """For a dispute or retirement, what happened to the record, in the shared vocabulary."""
    if p.action not in ("dispute", "retire") or p.target is None:
        return ""
    edited = p.result_record_id not in (None, p.target_id)
    return f" {vocabulary.DONE[vocabulary.proposal_outcome(p.action, p.state, edited=edited)]} {p.target.public_id}."


def _age(delta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def _as_dict(p: Proposal, full: bool = False) -> dict:
    data = {
        "id": p.public_id,
        "state": p.state,
        "action": p.action,
        "target": p.target.public_id if p.target is not None else None,
        "kind": p.kind,
        "space": p.space or (p.target.space if p.target is not None else ""),
        "title": p.title or (p.target.title if p.target is not None else ""),
        "tags": p.tags,
        "agent": p.proposer_label,
        "reason": p.reason,
        "created_at": p.created_at.isoformat(),
        "decided_at": p.decided_at.isoformat() if p.decided_at else None,
        "decision_note": p.decision_note,
        "result_record": p.result_record.public_id if p.result_record is not None else None,
    }
    if full:
        data.update(body=p.body, review_by=p.review_by, reviewer_changes=p.reviewer_changes, metadata=p.metadata)
    return data
