"""A person acts only where they hold the role, in every space a change
touches: one test per class of finding (each failed before the permission
policy in reviews/policy.py). The whole grid is tests/test_permission_matrix.py."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from reviews import actions
from reviews.errors import InvalidTransition, NotFound, SpaceNotAllowed, ValidationFailed
from reviews.models import ProposalState, Record, RecordStatus
from reviews.space_models import Membership

from .conftest import GOOD_BODY, content

pytestmark = pytest.mark.django_db

OPERATOR = actions.SystemActor("tests")


@pytest.fixture
def team_of_three(django_user_model, reviewer, second_reviewer):
    """team: rita owns, sam and tess review; ``pair`` needs two approvals with the same three."""
    tess = django_user_model.objects.create_user("tess", password="a-long-password-5", is_staff=True)
    actions.add_member("team", tess, role="reviewer", actor=OPERATOR)
    actions.create_space("pair", kind="team", name="Pair", owner=reviewer, actor=OPERATOR)
    for person in (second_reviewer, tess):
        actions.add_member("pair", person, role="reviewer", actor=OPERATOR)
    return {"rita": reviewer, "sam": second_reviewer, "tess": tess}


def propose(agent, **overrides):
    return actions.propose_create(agent=agent, reason="Seen in the README", **content(**overrides))


def nothing_written_in(slug):
    return not Record.objects.filter(space=slug).exists()


# --------------------------------------------------------------------------- writing into a space without a role


def test_an_edited_accept_cannot_change_the_space_of_a_proposal(team_of_three, team_agent):
    """sam reviews team only: changing the space of a team proposal while accepting it would write
    into rita's personal space, or past the two-person rule of pair. The space is locked on accept."""
    for elsewhere in ("personal", "pair"):
        proposal = propose(team_agent, title=f"Billing API repository for {elsewhere}")
        with pytest.raises(ValidationFailed) as refused:
            actions.accept_proposal_with_revision(proposal, actor=team_of_three["sam"], changes={"space": elsewhere})
        assert "accepted into its own space (team)" in refused.value.fields["space"]
        assert nothing_written_in(elsewhere)
        proposal.refresh_from_db()
        assert proposal.state == ProposalState.PENDING


# --------------------------------------------------------------------------- the two-person rule on every path


def test_one_reviewer_cannot_make_text_true_alone_in_a_two_approval_space(team_of_three, agent, team_agent):
    rita, sam = team_of_three["rita"], team_of_three["sam"]
    agent_of_sam, _ = actions.create_agent("sam-bot", spaces=["pair"], actor=sam)
    record = actions.accept_proposal(propose(agent_of_sam, space="pair"), actor=rita).result_record
    actions.set_required_approvals("pair", 2, actor=OPERATOR)
    with pytest.raises(InvalidTransition, match="pair needs two approvals"):
        actions.revise_record(record, actor=sam, changes={"body": f"{GOOD_BODY} Revised alone."})
    with pytest.raises(InvalidTransition, match="pair needs two approvals"):
        actions.retire_record(record, actor=sam, note="Gone, says one person.")
    # Accept their own agent's text in their personal space, then move it in.
    mine = actions.accept_proposal(propose(agent, space="personal", title="Moved in alone"), actor=rita)
    with pytest.raises(InvalidTransition, match="pair needs two approvals"):
        actions.move_record(mine.result_record, actor=rita, space="pair", note="Into the pair space.")
    # And out again: moving out removes approved text from the two-approval space.
    with pytest.raises(InvalidTransition, match="pair needs two approvals"):
        actions.move_record(record, actor=rita, space="personal", note="Mine now.")
    Record.objects.filter(pk=record.pk).update(body=f"{GOOD_BODY} Edited by hand.")
    with pytest.raises(InvalidTransition, match="pair needs two approvals"):
        actions.approve_current_text(record, actor=sam, note="Looks right to me.")
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED
    assert Record.objects.filter(space="pair").count() == 1


def test_a_first_approval_counts_only_while_its_person_still_decides(team_of_three, team_agent, django_user_model):
    """team-bot is rita's, so sam and tess (and a fourth, una) decide its proposals in team."""
    una = django_user_model.objects.create_user("una", password="a-long-password-6", is_staff=True)
    actions.add_member("team", una, role="reviewer", actor=OPERATOR)
    actions.set_required_approvals("team", 2, actor=OPERATOR)
    sam, tess = team_of_three["sam"], team_of_three["tess"]
    for lose_it in ("demoted", "removed", "deactivated"):
        proposal = propose(team_agent, title=f"Billing API repository, {lose_it}")
        assert actions.accept_proposal(proposal, actor=tess).state == ProposalState.PENDING
        if lose_it == "demoted":
            actions.add_member("team", tess, role="reader", actor=OPERATOR)
        elif lose_it == "removed":
            actions.remove_member("team", tess, actor=OPERATOR)
        else:
            actions.deactivate_account(tess, actor=team_of_three["rita"])
        again = actions.accept_proposal(proposal, actor=sam)
        assert again.state == ProposalState.PENDING, f"tess's approval counted after she was {lose_it}"
        actions.accept_proposal(proposal, actor=una)
        proposal.refresh_from_db()
        assert proposal.state == ProposalState.ACCEPTED
        # tess decides again for the next round.
        tess.refresh_from_db()
        if not tess.is_active:
            actions.activate_account(tess, actor=team_of_three["rita"])
            tess.refresh_from_db()
        Membership.objects.update_or_create(user=tess, space_id=_pk("team"), defaults={"role": "reviewer"})


def _pk(slug):
    from reviews.space_models import Space

    return Space.objects.get(slug=slug).pk


# --------------------------------------------------------------------------- reject as a duplicate of X


def test_a_duplicate_the_reviewer_cannot_see_is_an_unknown_id(team_of_three, agent, team_agent):
    rita, sam = team_of_three["rita"], team_of_three["sam"]
    secret = actions.accept_proposal(propose(agent, space="personal", title="Rita's own secret"), actor=rita)
    waiting = propose(agent, space="personal", title="Rita's pending secret")
    retired = actions.accept_proposal(propose(agent, space="personal", title="Rita's retired one"), actor=rita)
    actions.retire_record(retired.result_record, actor=rita, note="Gone.")
    ours = propose(team_agent, title="A team proposal")
    answers = set()
    for other in (secret.result_record.public_id, waiting.public_id, retired.result_record.public_id):
        with pytest.raises(NotFound) as refused:
            actions.reject_as_duplicate(ours, other, actor=sam)
        answers.add(refused.value.message.replace(other, "ID"))
    for unknown in ("rec_000000000000", "prop_000000000000"):
        with pytest.raises(NotFound) as refused:
            actions.reject_as_duplicate(ours, unknown, actor=sam)
        answers.add(refused.value.message.replace(unknown, "ID"))
    assert len(answers) == 1, answers
    ours.refresh_from_db()
    assert ours.state == ProposalState.PENDING and "secret" not in ours.decision_note


# --------------------------------------------------------------------------- ids across spaces


def test_a_refusal_never_names_a_successor_in_a_space_the_person_cannot_see(team_of_three, agent):
    rita, sam = team_of_three["rita"], team_of_three["sam"]
    record = actions.accept_proposal(propose(agent), actor=rita).result_record
    moved = actions.move_record(record, actor=rita, space="personal", note="Mine now.")
    for attempt in (
        lambda: actions.revise_record(record, actor=sam, changes={"body": f"{GOOD_BODY} Again."}),
        lambda: actions.retire_record(record, actor=sam, note="Old."),
        lambda: actions.verify_record(record, actor=sam),
        lambda: actions.propose_revision(record, agent=_team_only_agent(rita), reason="Fix it", title="Billing"),
    ):
        with pytest.raises(InvalidTransition) as refused:
            attempt()
        assert moved.public_id not in refused.value.message
        assert "superseded by a newer record" in refused.value.message
    # Rita sees both spaces: she is told where it went.
    with pytest.raises(InvalidTransition, match=moved.public_id):
        actions.retire_record(record, actor=rita, note="Old.")


def _team_only_agent(owner):
    found = actions.Agent.objects.filter(name="team-only").first()
    return found or actions.create_agent("team-only", spaces=["team"], actor=owner)[0]


def test_moving_checks_the_role_before_the_status(team_of_three, agent):
    rita, sam = team_of_three["rita"], team_of_three["sam"]
    retired = actions.accept_proposal(propose(agent, space="personal"), actor=rita).result_record
    actions.retire_record(retired, actor=rita, note="Gone.")
    moved_away = actions.accept_proposal(propose(agent, space="personal", title="Another"), actor=rita).result_record
    actions.move_record(moved_away, actor=rita, space="system", note="For everyone.")
    unknown = None
    with pytest.raises(NotFound) as caught:
        actions.move_record("rec_000000000000", actor=sam, space="team", note="Ours.")
    unknown = caught.value.message.replace("rec_000000000000", "ID")
    for record in (retired, moved_away):
        with pytest.raises(NotFound) as caught:
            actions.move_record(record, actor=sam, space="team", note="Ours.")
        assert caught.value.message.replace(record.public_id, "ID") == unknown


def test_a_decision_note_does_not_name_another_agents_proposal(team_of_three, agent, team_agent):
    rita = team_of_three["rita"]
    record = actions.accept_proposal(propose(agent), actor=rita).result_record
    mine = actions.propose_retirement(record, agent=agent, reason="Moved to the wiki.")
    theirs = actions.propose_retirement(record, agent=team_agent, reason="No longer true.")
    actions.accept_proposal(theirs, actor=rita)
    mine.refresh_from_db()
    assert mine.state == ProposalState.ACCEPTED
    assert theirs.public_id not in mine.decision_note


# --------------------------------------------------------------------------- the two-person rule, livable


def space_cli(*args):
    call_command("space", *args, stdout=io.StringIO(), stderr=io.StringIO())


def test_two_approvals_are_refused_where_fewer_than_two_could_approve(team_of_three, team_agent):
    rita, sam, tess = team_of_three["rita"], team_of_three["sam"], team_of_three["tess"]
    with pytest.raises(CommandError, match="one person who could approve"):
        space_cli("create", "solo", "--name", "Solo", "--owner", "rita", "--approvals", "2")
    actions.create_space("duo", kind="team", name="Duo", owner=rita, actor=OPERATOR)
    with pytest.raises(CommandError, match="1 person who could approve"):
        space_cli("approvals", "duo", "2")
    actions.add_member("duo", sam, role="reviewer", actor=OPERATOR)
    space_cli("approvals", "duo", "2")  # rita and sam
    with pytest.raises(InvalidTransition, match="1 person who could approve"):
        actions.add_member("duo", sam, role="reader", actor=rita)
    with pytest.raises(InvalidTransition, match="1 person who could approve"):
        actions.remove_member("duo", sam, actor=rita)
    # An agent's own person never approves its proposals: team-bot is rita's.
    actions.add_member("duo", tess, role="reviewer", actor=OPERATOR)
    actions.grant_space(team_agent, "duo", actor=rita)
    with pytest.raises(InvalidTransition, match="agent 'team-bot'"):
        actions.remove_member("duo", tess, actor=rita)
    assert Membership.objects.filter(space__slug="duo").count() == 3
    actions.set_required_approvals("duo", 1, actor=rita)
    actions.remove_member("duo", tess, actor=rita)  # one approval: nothing to keep livable


def test_every_role_check_in_the_actions_names_a_verb_of_the_policy_table():
    """No action decides who may act on its own: each check names its row of reviews/policy.RULES."""
    import inspect
    import re

    from reviews import policy
    from reviews.actions import decisions, merges, records, undo

    for module in (decisions, merges, records, undo):
        source = inspect.getsource(module)
        calls = re.findall(r"require_role\((.*?)\)\n", source, flags=re.S)
        assert calls, module.__name__
        for call in calls:
            verb = re.search(r'verb="(\w+)"', call) or re.search(r"verb=(\w+)", call)
            assert verb is not None, f"{module.__name__}: require_role({call}) names no verb"
            assert verb.group(1) in policy.RULES or verb.group(1) == "verb", call
        assert "role_of(" not in source and "DECIDING_ROLES" not in source, module.__name__


def test_the_record_page_offers_only_moves_the_policy_allows(team_of_three, agent, client):
    """Moving into a space that needs two approvals is refused, so the page does not offer it."""
    from django.urls import reverse

    rita = team_of_three["rita"]
    record = actions.accept_proposal(propose(agent), actor=rita).result_record
    client.force_login(rita)
    assert "system" in client.get(reverse("record_detail", args=[record.public_id])).context["move_targets"]
    actions.set_required_approvals("system", 2, actor=OPERATOR)
    page = client.get(reverse("record_detail", args=[record.public_id]))
    assert page.context["move_targets"] == ["personal", "pair"]


def test_an_agent_is_not_granted_a_two_approval_space_its_proposals_could_not_pass(team_of_three):
    """pair: rita, sam and tess decide; with two approvals an agent of rita's needs sam and tess.
    Once tess reads only, an agent of rita's could never have a proposal accepted there."""
    rita = team_of_three["rita"]
    actions.set_required_approvals("pair", 2, actor=OPERATOR)
    actions.create_agent("rita-pair", spaces=["pair"], actor=rita)  # sam and tess approve its proposals
    actions.set_required_approvals("pair", 1, actor=OPERATOR)
    actions.remove_member("pair", team_of_three["tess"], actor=OPERATOR)
    actions.revoke_agent("rita-pair", actor=rita)
    actions.set_required_approvals("pair", 2, actor=OPERATOR)  # rita and sam: livable with no agent of theirs
    with pytest.raises(ValidationFailed, match="approved by only 1 person"):
        actions.create_agent("rita-pair-2", spaces=["pair"], actor=rita)
    bot, _ = actions.create_agent("rita-elsewhere", spaces=["personal"], actor=rita)
    with pytest.raises(ValidationFailed, match="approved by only 1 person"):
        actions.grant_space(bot, "pair", actor=rita)


def test_a_merge_refusal_lists_only_the_agents_spaces_the_reviewer_sees(team_of_three, agent, team_agent):
    """claude-code is rita's, granted personal (hers) and team; sam reviews team and system."""
    rita, sam = team_of_three["rita"], team_of_three["sam"]
    system_bot, _ = actions.create_agent("system-bot", spaces=["system"], actor=rita)
    target = actions.accept_proposal(propose(system_bot, space="system"), actor=rita).result_record
    create = propose(agent, title="A team create of claude-code")
    with pytest.raises(SpaceNotAllowed) as refused:
        actions.merge_into_revision(create, target, actor=sam)
    assert "personal" not in refused.value.message and "personal" not in refused.value.details["allowed"]
    assert "it has: team" in refused.value.message


def test_a_space_edited_by_hand_moves_no_decision_into_another_space(team_of_three, agent):
    """rita's personal record, its space changed to team outside Vetted: a retirement proposed for it
    is still decided only by someone who decides in personal (its approved space)."""
    rita, sam = team_of_three["rita"], team_of_three["sam"]
    record = actions.accept_proposal(propose(agent, space="personal"), actor=rita).result_record
    Record.objects.filter(pk=record.pk).update(space="team")
    retirement = actions.propose_retirement(record, agent=agent, reason="It moved to the wiki.")
    with pytest.raises(NotFound):
        actions.accept_proposal(retirement, actor=sam)
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED
    assert actions.accept_proposal(retirement, actor=rita).state == ProposalState.ACCEPTED


def test_a_person_s_own_proposal_from_a_file_needs_two_other_approvers(team_of_three):
    """A vault or instruction-file edit is a proposal its person wrote: in a
    two-approval space that person is not one of the two, as the person of a
    proposing agent is not (otherwise one other reviewer would make it true)."""
    rita, sam, tess = team_of_three["rita"], team_of_three["sam"], team_of_three["tess"]
    actions.set_required_approvals("pair", 2, actor=OPERATOR)
    mine = actions.propose_file_create(
        user=sam, reason="Edited in my vault", **content(space="pair", title="Pair deploy window")
    )
    with pytest.raises(InvalidTransition, match="you proposed it"):
        actions.accept_proposal(mine, actor=sam)
    actions.accept_proposal(mine, actor=rita)
    mine.refresh_from_db()
    assert mine.state == ProposalState.PENDING  # one of two
    actions.accept_proposal(mine, actor=tess)
    mine.refresh_from_db()
    assert mine.state == ProposalState.ACCEPTED
