"""The permission policy, cell by cell, against the real actions (in process,
so the PostgreSQL pass runs it too).

Every person's change in ``reviews/policy.RULES`` x every standing (owner,
reviewer, reader, non-member, deactivated, a superuser who is not a member)
x every space kind (personal, team, a team that needs two approvals) x the
same space and across spaces (both directions). Each cell's expected answer
is read from ``policy.outcome`` given the roles this module *declares* (not
read back from the database), then the action is run and its answer
classified; a refusal's text must not name an id, title or slug of a space
the person does not belong to, and "not found" must read exactly as it does
for an id that does not exist.

One world is built per module (and per xdist worker) inside a transaction
that is never committed; each cell runs in a savepoint rolled back after it
(the ``django_db`` test transaction), so cells do not see each other.

Cells no world can hold are not generated: a personal space has one member,
its owner, so nobody is its reviewer or reader, and a person owns one
personal space, so "owner" has no second personal space to cross into.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from reviews import actions, policy, policy_table
from reviews.errors import InvalidTransition, NotFound, SpaceNotAllowed, ValidationFailed
from reviews.models import AuditEvent, Proposal, ProposalState, Record
from reviews.space_models import Membership, ProposalApproval
from tests.conftest import GOOD_BODY

pytestmark = pytest.mark.django_db

OPERATOR = actions.SystemActor("matrix")
S = policy.Standing

# The columns: who acts, and their standing in a team space.
ACTORS = {
    "owner": ("olive", S.OWNER),
    "reviewer": ("rory", S.REVIEWER),
    "reader": ("rhea", S.READER),
    "non-member": ("nina", S.NONE),
    "deactivated": ("dora", S.INACTIVE),
    "superuser, not a member": ("sue", S.NONE),
}
KINDS = {"personal": 1, "team": 1, "two-approval team": 2}
TEAM_OF = {"team": "crew", "two-approval team": "pair"}
PEOPLE = ("olive", "rory", "rhea", "nina", "dora", "sue", "ada")


def varied_space(kind: str, column: str) -> str | None:
    """The space whose standing the cell varies: a team the actor holds the
    column's role in, or for a personal space the actor's own (owner,
    deactivated) or another person's (non-member, superuser)."""
    if kind in TEAM_OF:
        return TEAM_OF[kind]
    return {
        "owner": "personal:olive",
        "deactivated": "personal:dora",
        "non-member": "personal:olive",
        "superuser, not a member": "personal:olive",
    }.get(column)


def home(column: str) -> str:
    return f"personal:{ACTORS[column][0]}"


# --------------------------------------------------------------------------- the world


@dataclass
class Space:
    slug: str
    pending: Proposal  # a create, from an agent no actor owns (a personal space: its person's)
    record: Record  # live, approved
    disputed: Record
    dispute: Proposal
    edited: Record  # changed outside Vetted, approved copy kept


@dataclass
class World:
    people: dict[str, Any]
    spaces: dict[str, Space] = field(default_factory=dict)

    def secrets_outside(self, name: str) -> list[str]:
        """Ids, titles and slugs of every space ``name`` does not belong to."""
        mine = set(Membership.objects.filter(user__username=name).values_list("space__slug", flat=True))
        found: list[str] = []
        for slug, space in self.spaces.items():
            if slug in mine:
                continue
            found.append(slug)
            for obj in (space.pending, space.record, space.disputed, space.dispute, space.edited):
                found += [obj.public_id, obj.title] if obj.title else [obj.public_id]
        return found


_n = iter(range(10_000))


def _content(slug: str, what: str) -> dict[str, Any]:
    n = next(_n)
    return {
        "kind": "fact",
        "space": slug,
        "title": f"Matrix {what} {n} of {slug.replace(':', ' ')}",
        "body": f"{GOOD_BODY} Matrix {what} number {n}.",
        "tags": ["matrix"],
    }


def _build() -> World:
    User = get_user_model()
    people = {}
    for name in PEOPLE:
        make = User.objects.create_superuser if name == "sue" else User.objects.create_user
        people[name] = make(name, f"{name}@example.com", f"a-long-password-{name}", is_staff=True)
    for name in PEOPLE:
        actions.create_space("", kind="personal", name=f"{name}'s", owner=name, actor=OPERATOR)
    for slug in ("crew", "pair"):
        actions.create_space(slug, kind="team", name=slug.title(), owner="olive", actor=OPERATOR)
        for name, role in (("rory", "reviewer"), ("rhea", "reader"), ("dora", "owner"), ("ada", "reviewer")):
            actions.add_member(slug, name, role=role, actor=OPERATOR)
    bots = {}
    for name in PEOPLE:
        teams = ["crew", "pair"] if name in ("olive", "rory", "rhea", "dora", "ada") else []
        bots[name], _ = actions.create_agent(f"{name}-bot", spaces=[f"personal:{name}", *teams], actor=people[name])
    world = World(people)
    for slug in ("crew", "pair", *(f"personal:{name}" for name in PEOPLE)):
        owner = slug.split(":")[1] if ":" in slug else "olive"
        bot = bots[slug.split(":")[1]] if ":" in slug else bots["ada"]
        decider = people[owner]

        def approved(what: str, bot: Any = bot, slug: str = slug, decider: Any = decider) -> Record:
            p = actions.propose_create(agent=bot, reason="Seen in the matrix", **_content(slug, what))
            made = actions.accept_proposal(p, actor=decider).result_record
            assert made is not None
            return made

        record, disputed, edited = approved("record"), approved("disputed"), approved("edited")
        dispute = actions.dispute_record(disputed, agent=bot, reason="This changed last week, see the wiki.")
        Record.objects.filter(pk=edited.pk).update(body=f"{GOOD_BODY} Changed by hand in {slug}.")
        edited.refresh_from_db()
        pending = actions.propose_create(agent=bot, reason="Seen in the matrix", **_content(slug, "pending"))
        world.spaces[slug] = Space(slug, pending, record, disputed, dispute, edited)
    actions.set_required_approvals("pair", 2, actor=OPERATOR)
    actions.deactivate_account("dora", actor=people["sue"])
    for person in people.values():
        person.refresh_from_db()
    return world


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The world, built once for the module in a transaction rolled back at its end."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield _build()
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


# --------------------------------------------------------------------------- the cells


@dataclass(frozen=True)
class Cell:
    verb: str
    column: str
    kind: str
    cross: str  # "same", "from here" (the varied space is the source), "into here" (it is the other part)

    @property
    def id(self) -> str:
        parts = (self.verb, self.column.replace(",", ""), self.kind, self.cross)
        return "-".join(part.replace(" ", "") for part in parts)


# Which verbs touch a second space, and in which directions the matrix runs them.
CROSS = {
    "accept_edited": ("same", "from here"),  # from here: the edit changes the space (locked)
    "reject_duplicate": ("same", "from here", "into here"),
    "merge": ("same", "into here"),  # into here: a create of the actor's own agent, merged into a record here
    "move": ("from here", "into here"),
}


def cells() -> list[Cell]:
    out = []
    for verb in policy.RULES:
        for column in ACTORS:
            for kind in KINDS:
                if varied_space(kind, column) is None:
                    continue
                for cross in CROSS.get(verb, ("same",)):
                    if cross != "same" and varied_space(kind, column) == home(column):
                        continue  # one personal space per person: nothing to cross into
                    out.append(Cell(verb, column, kind, cross))
    return out


CELLS = cells()


def expected(cell: Cell) -> policy.Outcome:
    """The cell's answer from the policy's table, given the declared roles:
    the varied space holds the column's standing; the actor's own personal
    space, their owner's."""
    actor, team_standing = ACTORS[cell.column]
    varied = varied_space(cell.kind, cell.column)
    mine = varied == home(cell.column)
    standing = (
        team_standing if cell.kind in TEAM_OF else (S.INACTIVE if actor == "dora" else S.OWNER if mine else S.NONE)
    )
    own = S.INACTIVE if actor == "dora" else S.OWNER
    required = KINDS[cell.kind]
    if cell.cross == "same" or len(policy.RULES[cell.verb].spaces) == 1:
        # One space asked about (accept_edited across spaces: the proposal's, which is locked).
        return policy.outcome(cell.verb, [standing], [required])
    if cell.cross == "from here":
        return policy.outcome(cell.verb, [standing, own], [required, 1])
    return policy.outcome(cell.verb, [own, standing], [1, required])


def _run(cell: Cell, world: World) -> Callable[[], Any]:
    """The action the cell runs, as the actor."""
    actor = world.people[ACTORS[cell.column][0]]
    here = world.spaces[varied_space(cell.kind, cell.column) or ""]
    mine = world.spaces[home(cell.column)]
    verb, cross = cell.verb, cell.cross
    change = {"body": f"{GOOD_BODY} Corrected in the matrix."}
    if verb == "accept":
        return lambda: actions.accept_proposal(here.pending, actor=actor)
    if verb == "accept_edited":
        edit = {"title": "Matrix edited title here"} if cross == "same" else {"space": mine.slug}
        return lambda: actions.accept_proposal_with_revision(here.pending, actor=actor, changes=edit)
    if verb == "correct":
        return lambda: actions.accept_proposal_with_revision(here.dispute, actor=actor, changes=change)
    if verb == "reject":
        return lambda: actions.reject_proposal(here.pending, actor=actor, note="Not this.")
    if verb == "reject_duplicate":
        proposal, duplicate = {
            "same": (here.pending, here.record),
            "from here": (here.pending, mine.record),
            "into here": (mine.pending, here.record),
        }[cross]
        return lambda: actions.reject_as_duplicate(proposal, duplicate.public_id, actor=actor)
    if verb == "merge":
        proposal = here.pending if cross == "same" else mine.pending
        return lambda: actions.merge_into_revision(proposal, here.record, actor=actor)
    if verb == "revise":
        return lambda: actions.revise_record(here.record, actor=actor, changes=change)
    if verb == "approve_current":
        return lambda: actions.approve_current_text(here.edited, actor=actor, note="The new text is right.")
    if verb == "restore":
        return lambda: actions.restore_approved_text(here.edited, actor=actor)
    if verb == "retire":
        return lambda: actions.retire_record(here.record, actor=actor, note="No longer true.")
    if verb == "keep":
        return lambda: actions.clear_dispute(here.disputed, actor=actor)
    if verb == "verify":
        return lambda: actions.verify_record(here.record, actor=actor)
    if verb == "move":
        record, to = (here.record, mine.slug) if cross == "from here" else (mine.record, here.slug)
        return lambda: actions.move_record(record, actor=actor, space=to, note="Belongs there.")
    if verb == "undo":
        return lambda: _undo_after_losing_nothing(here, actor)
    if verb == "manage":
        return lambda: actions.add_member(here.slug, "nina", role="reader", actor=actor)
    raise AssertionError(f"no runner for {verb}: add one with its row in policy.RULES")


def _undo_after_losing_nothing(here: Space, actor: Any) -> Any:
    """The actor verifies a record while an owner of its space, then holds
    their real standing again and undoes it: undo asks the policy afresh."""
    real = Membership.objects.filter(user=actor, space__slug=here.slug).first()
    was_active = actor.is_active
    type(actor).objects.filter(pk=actor.pk).update(is_active=True)
    actor.is_active = True
    Membership.objects.update_or_create(user=actor, space_id=_space_pk(here.slug), defaults={"role": "owner"})
    actions.verify_record(here.record, actor=actor)
    if real is None:
        Membership.objects.filter(user=actor, space__slug=here.slug).delete()
    else:
        Membership.objects.filter(pk=real.pk).update(role=real.role)
    type(actor).objects.filter(pk=actor.pk).update(is_active=was_active)
    actor.is_active = was_active
    event = AuditEvent.objects.filter(event_type="record.verified").latest("id")
    return actions.undo_decision(event, actor=actor)


def _space_pk(slug: str) -> int:
    from reviews.space_models import Space as SpaceRow

    return SpaceRow.objects.get(slug=slug).pk


def observe(cell: Cell, run: Callable[[], Any], world: World) -> tuple[str, str]:
    """(what happened, the refusal's text)."""
    approvals = ProposalApproval.objects.count()
    try:
        done = run()
    except NotFound as exc:
        return policy.Outcome.NOT_FOUND.value, exc.message
    except InvalidTransition as exc:
        text = exc.message
        if "needs two approvals" in text:
            return policy.Outcome.TWO_PERSON.value, text
        if "is a reader of" in text:
            return policy.Outcome.NOT_DECIDING.value, text
        if "Only an owner of" in text:
            return policy.Outcome.NOT_OWNER.value, text
        if "inactive" in text or "active reviewer" in text:
            return policy.Outcome.ACCOUNT.value, text
        return f"refused otherwise: {text}", text
    except (ValidationFailed, SpaceNotAllowed) as exc:
        return f"refused otherwise: {exc.message} {getattr(exc, 'details', '')}", exc.message
    if isinstance(done, Proposal) and done.state == ProposalState.PENDING and cell.verb == "accept":
        assert ProposalApproval.objects.count() == approvals + 1
        return policy.Outcome.COUNTED.value, ""
    return policy.Outcome.ALLOWED.value, ""


# What an allowed cell may still be refused for, not being a question of permission.
ALLOWED_BUT = {
    ("accept_edited", "from here"): "accepted into its own space",  # the space is locked
    ("manage", "same", "personal"): "personal space",  # a personal space has one member
}


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_the_action_answers_as_the_policy_table_says(cell, world):
    want = expected(cell)
    got, text = observe(cell, _run(cell, world), world)
    allowed_but = ALLOWED_BUT.get((cell.verb, cell.cross)) or ALLOWED_BUT.get((cell.verb, cell.cross, cell.kind))
    if want == policy.Outcome.ALLOWED and allowed_but is not None:
        assert got.startswith("refused otherwise") and allowed_but in text, (cell, got)
    else:
        assert got == want.value, f"{cell}: the table says {want.value}, the action did {got}"
    if text:
        name = ACTORS[cell.column][0]
        for secret in world.secrets_outside(name):
            asked = _asked_for(cell, world)
            if secret in asked:
                continue  # echoing what the person typed tells them nothing
            assert secret not in text, f"{cell}: the refusal names {secret!r}, of a space {name} cannot see: {text}"


def _asked_for(cell: Cell, world: World) -> set[str]:
    """The ids and slugs the cell's call itself names."""
    here = world.spaces[varied_space(cell.kind, cell.column) or ""]
    mine = world.spaces[home(cell.column)]
    named = {here.pending.public_id, here.record.public_id, here.dispute.public_id, here.edited.public_id}
    named |= {here.disputed.public_id, mine.pending.public_id, mine.record.public_id}
    if cell.verb in ("move", "manage") or (cell.verb == "accept_edited" and cell.cross != "same"):
        named |= {here.slug, mine.slug}
    return named


def test_not_found_reads_as_an_unknown_id_does(world):
    """The words for a record or proposal in someone else's space are those for an id that does not exist."""
    nina = world.people["nina"]
    theirs = world.spaces["personal:olive"]
    pairs = [
        (lambda i: actions.accept_proposal(i, actor=nina), theirs.pending.public_id, "prop_000000000000"),
        (lambda i: actions.retire_record(i, actor=nina, note="x"), theirs.record.public_id, "rec_000000000000"),
        (
            lambda i: actions.reject_as_duplicate(world.spaces["personal:nina"].pending, i, actor=nina),
            theirs.record.public_id,
            "rec_000000000000",
        ),
        (
            lambda i: actions.reject_as_duplicate(world.spaces["personal:nina"].pending, i, actor=nina),
            theirs.pending.public_id,
            "prop_000000000000",
        ),
    ]
    for run, real, unknown in pairs:
        answers = []
        for public_id in (real, unknown):
            with transaction.atomic():
                with pytest.raises(NotFound) as caught:
                    run(public_id)
                answers.append(caught.value.message.replace(public_id, "ID"))
        assert answers[0] == answers[1]


def test_every_rule_has_a_runner_and_every_column_a_cell():
    verbs = {c.verb for c in CELLS}
    assert verbs == set(policy.RULES)
    assert {c.column for c in CELLS} == set(ACTORS)
    assert {c.kind for c in CELLS} == set(KINDS)
    assert len(CELLS) > 250


def test_the_matrix_holds_refusals_and_allowances_of_each_kind():
    """A matrix whose cells all say one thing could not fail usefully."""
    seen = {expected(c) for c in CELLS}
    assert seen == set(policy.Outcome), seen


def test_the_documented_policy_table_is_the_policy():
    """docs/security-permissions.md carries the table rendered from policy.RULES; regenerate it on a change:
    replace the lines between policy_table.TABLE_START and policy_table.TABLE_END with
    policy_table.table_markdown()."""
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "security-permissions.md").read_text()
    committed = page.split(policy_table.TABLE_START + "\n", 1)[1].split(policy_table.TABLE_END, 1)[0]
    assert committed == policy_table.table_markdown()


# --------------------------------------------------------------------------- the same answer from every door
#
# The inbox's bulk accept, the `review` command and an import with --approve
# reach the same action, so they must give the table's answer for ``accept``
# too; checked by what they changed (the database), for every standing and kind.

ENTRY_CELLS = [c for c in CELLS if c.verb == "accept"]


def _effect(proposal: Proposal, approvals_before: int) -> policy.Outcome | str:
    proposal.refresh_from_db()
    if proposal.state == ProposalState.ACCEPTED:
        return policy.Outcome.ALLOWED
    if proposal.approvals.count() == approvals_before + 1:
        return policy.Outcome.COUNTED
    return "refused"


def _wanted(cell: Cell) -> policy.Outcome | str:
    want = expected(cell)
    return want if want in (policy.Outcome.ALLOWED, policy.Outcome.COUNTED) else "refused"


@pytest.mark.parametrize("cell", ENTRY_CELLS, ids=[c.id for c in ENTRY_CELLS])
def test_the_review_command_gives_the_tables_answer(cell, world):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    name = ACTORS[cell.column][0]
    proposal = world.spaces[varied_space(cell.kind, cell.column) or ""].pending
    before = proposal.approvals.count()
    try:
        call_command("review", "accept", proposal.public_id, "--reviewer", name, stdout=io.StringIO())
    except CommandError as exc:
        for secret in world.secrets_outside(name):
            assert secret == proposal.public_id or secret not in str(exc), (cell, str(exc))
    assert _effect(proposal, before) == _wanted(cell)


@pytest.mark.parametrize("cell", ENTRY_CELLS, ids=[c.id for c in ENTRY_CELLS])
def test_the_bulk_accept_gives_the_tables_answer(cell, world, client):
    from django.urls import reverse

    proposal = world.spaces[varied_space(cell.kind, cell.column) or ""].pending
    before = proposal.approvals.count()
    client.force_login(world.people[ACTORS[cell.column][0]])
    ids = [proposal.public_id]
    # flagged_ok: the flags (alike proposals in the world) confirmed, so only the policy answers here.
    client.post(reverse("proposal_bulk"), {"op": "accept", "ids": ids, "flagged_ok": ids})
    assert _effect(proposal, before) == _wanted(cell)


@pytest.mark.parametrize("cell", ENTRY_CELLS, ids=[c.id for c in ENTRY_CELLS])
def test_an_import_with_approve_gives_the_tables_answer(cell, world):
    slug = varied_space(cell.kind, cell.column) or ""
    row = _content(slug, "imported")
    try:
        result = actions.import_records([(1, row)], reviewer=world.people[ACTORS[cell.column][0]])
    except (actions.ImportFailed, InvalidTransition):
        assert _wanted(cell) == "refused", cell
        assert not Record.objects.filter(title=row["title"]).exists()
        return
    made = result.created[0]
    if made.startswith("rec_"):
        assert _wanted(cell) == policy.Outcome.ALLOWED, cell
    else:
        proposal = Proposal.objects.get(public_id=made)
        assert proposal.state == ProposalState.PENDING and proposal.approvals.count() == 1
        assert _wanted(cell) == policy.Outcome.COUNTED, cell
