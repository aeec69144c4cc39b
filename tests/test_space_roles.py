"""People's access to spaces, checked in the actions (issue 16): owner and
reviewer decide, a reader decides nothing, a non-member finds nothing (the
same NotFound as an unknown id); spaces, members and grants change only
through audited actions; the two-person rule."""

from __future__ import annotations

import pytest

from reviews import actions
from reviews.errors import InvalidTransition, NotFound, ValidationFailed
from reviews.models import AuditEvent, ProposalState, RecordStatus
from reviews.space_models import Membership, Space

from .conftest import content

pytestmark = pytest.mark.django_db

OPERATOR = actions.SystemActor("manage.py space")


@pytest.fixture
def people(django_user_model, reviewer, second_reviewer):
    """rita owns personal/team/system; sam reviews team and system; rhea reads team; bob is nobody's."""
    rhea = django_user_model.objects.create_user("rhea", password="a-long-password-3", is_staff=True)
    bob = django_user_model.objects.create_user("bob", password="a-long-password-4", is_staff=True)
    actions.add_member("team", rhea, role="reader", actor=reviewer)
    return {"rita": reviewer, "sam": second_reviewer, "rhea": rhea, "bob": bob}


def propose(agent, **overrides):
    return actions.propose_create(agent=agent, reason="Seen in the README", **content(**overrides))


def test_a_reviewer_of_the_space_decides(people, team_agent):
    accepted = actions.accept_proposal(propose(team_agent), actor=people["sam"])
    assert accepted.state == ProposalState.ACCEPTED


def test_a_reader_sees_but_decides_nothing(people, team_agent):
    proposal = propose(team_agent)
    with pytest.raises(InvalidTransition, match="rhea is a reader of team; readers .* decide nothing"):
        actions.accept_proposal(proposal, actor=people["rhea"])
    with pytest.raises(InvalidTransition, match="reader"):
        actions.reject_proposal(proposal, actor=people["rhea"], note="no")
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.PENDING


def test_another_persons_personal_space_does_not_exist_for_them(people, agent):
    proposal = propose(agent, space="personal")
    record = actions.accept_proposal(propose(agent, space="personal", title="Another title"), actor=people["rita"])
    unknown = None
    try:
        actions.accept_proposal("prop_000000000000", actor=people["sam"])
    except NotFound as exc:
        unknown = exc.message.replace("prop_000000000000", "ID")
    with pytest.raises(NotFound) as caught:
        actions.accept_proposal(proposal, actor=people["sam"])
    assert caught.value.message.replace(proposal.public_id, "ID") == unknown
    with pytest.raises(NotFound, match="No record with id"):
        actions.retire_record(record.result_record, actor=people["sam"], note="gone")
    with pytest.raises(NotFound):
        actions.verify_record(record.result_record, actor=people["bob"])


def test_moving_needs_a_reviewer_of_both_spaces(people, agent):
    record = actions.accept_proposal(propose(agent, space="team"), actor=people["rita"]).result_record
    with pytest.raises(NotFound, match="No space 'personal'"):
        actions.move_record(record, actor=people["sam"], space="personal", note="mine now")
    moved = actions.move_record(record, actor=people["rita"], space="system", note="for everyone")
    assert moved.space == "system"
    assert AuditEvent.objects.filter(event_type="record.moved", record_ref=moved.public_id).exists()


# --------------------------------------------------------------------------- spaces, members, grants


def test_creating_a_team_space_makes_its_creator_owner_and_is_audited(people):
    space = actions.create_space("acme", kind="team", name="Acme Corp", actor=people["sam"])
    assert [(m.user.username, m.role) for m in space.memberships.all()] == [("sam", "owner")]
    event = AuditEvent.objects.get(event_type="space.created", subject_id="acme")
    assert event.actor == "sam" and event.extra["members"] == {"sam": "owner"}


@pytest.mark.parametrize("slug", ["Acme Corp", "team", "personal", "-acme", "a" * 41, "personal:bob"])
def test_a_team_slug_is_checked(people, slug):
    before = Space.objects.count()
    with pytest.raises(ValidationFailed, match="slug"):
        actions.create_space(slug, kind="team", name="X", actor=OPERATOR, owner="bob")
    assert Space.objects.count() == before


def test_a_personal_space_is_named_for_its_one_owner(people):
    space = actions.create_space("", kind="personal", name="Bob's memory", actor=OPERATOR, owner="bob")
    assert space.slug == "personal:bob"
    with pytest.raises(InvalidTransition, match="personal space: its one member is its owner"):
        actions.add_member(space, "sam", role="reader", actor=OPERATOR)
    with pytest.raises(InvalidTransition, match="one approval"):
        actions.set_required_approvals(space, 2, actor=OPERATOR)


def test_only_an_owner_manages_members(people):
    with pytest.raises(InvalidTransition, match="Only an owner of 'team'"):
        actions.add_member("team", "bob", role="reviewer", actor=people["sam"])
    with pytest.raises(NotFound, match="No space 'personal'"):
        actions.add_member("personal", "bob", role="reviewer", actor=people["bob"])
    actions.add_member("team", "bob", role="reviewer", actor=people["rita"])
    assert Membership.objects.get(space__slug="team", user=people["bob"]).role == "reviewer"
    assert AuditEvent.objects.filter(event_type="space.member_added", subject_id="team", actor="rita").count() == 2


def test_the_last_owner_cannot_leave(people):
    with pytest.raises(InvalidTransition, match="last owner"):
        actions.remove_member("team", "rita", actor=OPERATOR)


def test_an_agent_is_granted_only_spaces_of_its_person(people):
    agent, _token = actions.create_agent("sam-bot", spaces=["team"], actor=people["sam"])
    assert agent.owner == people["sam"]
    with pytest.raises(ValidationFailed, match="personal: not a space sam is a member of"):
        actions.create_agent("sam-bot-2", spaces=["personal"], actor=people["sam"])
    with pytest.raises(ValidationFailed, match="not a space sam is a member of"):
        actions.grant_space(agent, "personal", actor=people["sam"])
    with pytest.raises(InvalidTransition, match="Only the person of agent"):
        actions.grant_space(agent, "system", actor=people["rita"])
    granted = actions.grant_space(agent, "system", actor=people["sam"])
    assert granted.spaces == ["system", "team"]
    assert AuditEvent.objects.filter(event_type="agent.granted", subject_id=agent.public_id).exists()


def test_removing_a_member_takes_that_space_from_their_agents(people):
    agent, _token = actions.create_agent("sam-bot", spaces=["team", "system"], actor=people["sam"])
    assert actions.remove_member("team", "sam", actor=people["rita"]) == ["sam-bot"]
    agent.refresh_from_db()
    assert agent.spaces == ["system"]
    event = AuditEvent.objects.get(event_type="space.member_removed")
    assert event.extra == {"member": "sam", "role": "reviewer", "grants_removed": ["sam-bot"]}


# --------------------------------------------------------------------------- the two-person rule


@pytest.fixture
def two_person(people, django_user_model):
    """team needs two approvals; tess is a third reviewer; team_agent belongs to rita."""
    tess = django_user_model.objects.create_user("tess", password="a-long-password-5", is_staff=True)
    actions.add_member("team", tess, role="reviewer", actor=people["rita"])
    actions.set_required_approvals("team", 2, actor=people["rita"])
    return {**people, "tess": tess}


def test_two_different_reviewers_make_it_true(two_person, team_agent):
    proposal = propose(team_agent)
    first = actions.accept_proposal(proposal, actor=two_person["sam"], note="looks right")
    assert first.state == ProposalState.PENDING and first.result_record is None
    assert AuditEvent.objects.get(event_type="proposal.approved").extra == {
        "action": "create",
        "approvals": 1,
        "required": 2,
    }
    second = actions.accept_proposal(proposal, actor=two_person["tess"])
    assert second.state == ProposalState.ACCEPTED and second.result_record.status == RecordStatus.APPROVED
    assert AuditEvent.objects.get(event_type="proposal.accepted").extra["approved_by"] == ["sam", "tess"]


def test_the_same_reviewer_twice_is_refused(two_person, team_agent):
    proposal = propose(team_agent)
    actions.accept_proposal(proposal, actor=two_person["sam"])
    with pytest.raises(InvalidTransition, match="already accepted .* 2 different reviewers"):
        actions.accept_proposal(proposal, actor=two_person["sam"])


def test_the_person_who_owns_the_proposing_agent_is_refused(two_person, team_agent):
    with pytest.raises(InvalidTransition, match="you own agent 'team-bot'"):
        actions.accept_proposal(propose(team_agent), actor=two_person["rita"])


def test_a_reject_after_one_accept_rejects(two_person, team_agent):
    proposal = propose(team_agent)
    actions.accept_proposal(proposal, actor=two_person["sam"])
    rejected = actions.reject_proposal(proposal, actor=two_person["tess"], note="Not what we agreed.")
    assert rejected.state == ProposalState.REJECTED


def test_a_revision_resets_the_count(two_person, team_agent, make_record):
    actions.set_required_approvals("team", 1, actor=two_person["rita"])
    existing = make_record(title="Billing API repository layout")
    actions.set_required_approvals("team", 2, actor=two_person["rita"])
    proposal = propose(team_agent, body="The billing API lives in acme/billing-api and deploys from main daily.")
    actions.accept_proposal(proposal, actor=two_person["sam"])
    actions.merge_into_revision(proposal, existing, actor=two_person["sam"])  # the text it approves changes
    again = actions.accept_proposal(proposal, actor=two_person["tess"])
    assert again.state == ProposalState.PENDING, "sam's accept was of other text: tess's is the first again"
    assert actions.accept_proposal(proposal, actor=two_person["sam"]).state == ProposalState.ACCEPTED


def test_an_edited_accept_is_refused_where_two_must_approve(two_person, team_agent):
    with pytest.raises(InvalidTransition, match="edited version"):
        actions.accept_proposal_with_revision(
            propose(team_agent), actor=two_person["sam"], changes={"title": "Billing API repo"}
        )


def test_a_personal_space_needs_its_owner_only(people, agent):
    assert actions.accept_proposal(propose(agent, space="personal"), actor=people["rita"]).state == "accepted"


# --------------------------------------------------------------------------- manage.py space


def space_cli(*args):
    import io

    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    call_command("space", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_the_space_command_creates_adds_grants_and_lists_every_change_audited(people):
    from django.core.management.base import CommandError

    # Two approvals from the start would leave one person who could approve: refused, nothing made.
    with pytest.raises(CommandError, match="one person who could approve"):
        space_cli("create", "acme", "--name", "Acme Corp", "--owner", "rita", "--approvals", "2")
    assert "Created team space acme (Acme Corp), owner rita" in space_cli(
        "create", "acme", "--name", "Acme Corp", "--owner", "rita"
    )
    assert "sam is now a reviewer of acme" in space_cli("add-member", "acme", "sam", "--role", "reviewer")
    actions.create_agent("sam-bot", spaces=["team"], actor=people["sam"])
    assert "now has: acme, team" in space_cli("grant", "sam-bot", "acme")
    assert "now has: team" in space_cli("revoke", "sam-bot", "acme")
    assert "agents that lost it" not in space_cli("remove-member", "acme", "sam")
    import json

    listed = {row["slug"]: row for row in json.loads(space_cli("list", "--json"))}
    assert listed["acme"]["members"] == {"rita": "owner"} and listed["acme"]["required_approvals"] == 1
    assert listed["team"]["members"] == {"rhea": "reader", "rita": "owner", "sam": "reviewer"}
    events = list(
        AuditEvent.objects.filter(actor="manage.py space").order_by("id").values_list("event_type", flat=True)
    )
    assert events == [
        "space.created",
        "space.member_added",
        "agent.granted",
        "agent.grant_revoked",
        "space.member_removed",
    ]


def test_the_space_command_says_what_was_wrong(people):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not personal, system, team"):
        space_cli("create", "team", "--name", "Team again", "--owner", "rita")
    with pytest.raises(CommandError, match="Only an owner of 'team'"):
        space_cli("--as", "sam", "add-member", "team", "bob", "--role", "reader")


def test_the_second_reviewer_sees_the_first_accept_on_the_card(two_person, team_agent, client):
    proposal = propose(team_agent)
    client.force_login(two_person["tess"])
    assert "0 of 2 approvals" in client.get("/").content.decode()
    actions.accept_proposal(proposal, actor=two_person["sam"])
    assert "1 of 2 approvals: accepted by sam" in client.get("/").content.decode()


def test_the_settings_page_lists_an_owners_spaces_with_members_and_roles(people, client):
    client.force_login(people["rita"])
    page = client.get("/settings/").content.decode()
    assert 'id="space-team"' in page and "rhea: reader" in page and "sam: reviewer" in page
    client.force_login(people["rhea"])
    page = client.get("/settings/").content.decode()
    assert 'id="space-team"' in page and "sam: reviewer" not in page  # a reader sees no member list
    assert 'id="space-personal"' not in page


def test_the_first_superuser_made_any_way_owns_a_fresh_installs_spaces(django_user_model):
    first = django_user_model.objects.create_superuser("ada", "ada@example.com", "a-long-password-6")
    second = django_user_model.objects.create_superuser("bea", "bea@example.com", "a-long-password-7")
    owners = set(Membership.objects.values_list("space__slug", "user__username", "role"))
    assert owners == {("personal", "ada", "owner"), ("team", "ada", "owner"), ("system", "ada", "owner")}
    assert not Membership.objects.filter(user=second).exists() and first.is_superuser
    assert AuditEvent.objects.filter(event_type="space.member_added", actor="system:first-superuser").count() == 3
