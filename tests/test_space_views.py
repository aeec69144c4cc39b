"""The space pages: the spaces a person holds a role in, one space's members,
grants and approval rule, and the forms that change them. Each form goes
through an action (the permission policy and the livability check decide);
the page shows the action's refusal. Two real accounts: rita (owner of the
team space and of acme, created here) and sam (a reviewer of acme); nora is
a staff account in no space of theirs."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from reviews import actions
from reviews.models import Agent, AuditEvent
from reviews.space_models import Membership, Space
from tests.shared_data import for_a_test, fresh, make_reviewer, shared

pytestmark = pytest.mark.django_db


def _people() -> dict:
    reviewer = make_reviewer()
    sam = get_user_model().objects.create_user("sam", password="a-long-password-2", is_staff=True)
    nora = get_user_model().objects.create_user("nora", password="a-long-password-3", is_staff=True)
    actions.create_space("acme", kind="team", name="Acme Corp", actor=reviewer)
    actions.add_member("acme", sam, role="reviewer", actor=reviewer)
    return {"rita": reviewer, "sam": sam, "nora": nora}


@pytest.fixture(scope="module")
def people_world(django_db_setup, django_db_blocker):
    """``_people()``, made once for the module (every test here uses it), rolled back at its end."""
    yield from shared(_people, django_db_blocker)


@pytest.fixture
def people(people_world, db):
    """This test's own copies of rita, sam and nora."""
    return for_a_test(people_world)


def _as(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def _messages(response) -> str:
    return " ".join(str(m) for m in response.context["messages"])


def _role(slug, user) -> str | None:
    return Membership.objects.filter(space__slug=slug, user=user).values_list("role", flat=True).first()


# --------------------------------------------------------------------------- the list and a space's page


def test_the_list_shows_only_the_spaces_a_person_holds_a_role_in(people):
    rita = _as(people["rita"]).get(reverse("spaces"))
    assert rita.status_code == 200
    assert 'id="space-acme"' in rita.text and 'id="space-team"' in rita.text
    sam = _as(people["sam"]).get(reverse("spaces"))
    assert 'id="space-acme"' in sam.text and 'id="space-team"' not in sam.text
    nora = _as(people["nora"]).get(reverse("spaces"))
    assert "space-acme" not in nora.text and "Acme Corp" not in nora.text


def test_the_space_pages_need_a_signed_in_person(people):
    for name, args in (("spaces", []), ("space_detail", ["acme"])):
        response = Client().get(reverse(name, args=args))
        assert response.status_code == 302 and "login" in response["Location"]


def test_an_owner_sees_members_and_controls_a_reviewer_sees_neither(people):
    owner = _as(people["rita"]).get(reverse("space_detail", args=["acme"]))
    assert 'id="member-sam"' in owner.text and 'id="member-add-form"' in owner.text
    assert 'id="approvals-form"' in owner.text
    reviewer = _as(people["sam"]).get(reverse("space_detail", args=["acme"]))
    assert reviewer.status_code == 200
    assert 'id="your-role">reviewer' in reviewer.text
    assert 'id="member-sam"' not in reviewer.text and "member-add-form" not in reviewer.text
    assert "approvals-form" not in reviewer.text
    # Who else decides is an owner's to see (where one approval is needed).
    assert 'id="space-approvers"' not in reviewer.text and 'id="space-approvers">rita, sam' in owner.text


def test_a_space_is_the_same_404_to_a_non_member_as_an_unknown_one(people):
    nora = _as(people["nora"])
    theirs = nora.get(reverse("space_detail", args=["acme"]))
    unknown = nora.get(reverse("space_detail", args=["no-such-space"]))
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.text.replace("acme", "X") == unknown.text.replace("no-such-space", "X")


# --------------------------------------------------------------------------- create


def test_creating_a_space_makes_the_person_its_owner_and_is_audited(people):
    response = _as(people["sam"]).post(reverse("space_create"), {"slug": "north-rail", "name": "Northrail"})
    assert response.status_code == 302 and response["Location"] == reverse("space_detail", args=["north-rail"])
    assert _role("north-rail", people["sam"]) == "owner"
    assert AuditEvent.objects.filter(event_type="space.created", subject_id="north-rail").exists()


def test_a_bad_slug_is_refused_with_what_is_allowed(people):
    response = _as(people["sam"]).post(reverse("space_create"), {"slug": "Not A Slug!", "name": "X"})
    assert response.status_code == 400
    assert "lower-case letters, digits and inner hyphens" in response.text
    assert not Space.objects.filter(name="X").exists()


def test_an_existing_slug_is_refused_without_joining_it(people):
    response = _as(people["nora"]).post(reverse("space_create"), {"slug": "acme", "name": "Mine now"})
    assert response.status_code == 400
    assert _role("acme", people["nora"]) is None
    assert Space.objects.get(slug="acme").name == "Acme Corp"


# --------------------------------------------------------------------------- members and roles


def test_an_owner_adds_a_member_and_changes_their_role(people):
    rita = _as(people["rita"])
    added = rita.post(reverse("space_member_add", args=["acme"]), {"username": "nora", "role": "reader"}, follow=True)
    assert "nora is now a reader of acme" in _messages(added)
    assert _role("acme", people["nora"]) == "reader"
    rita.post(reverse("space_member_add", args=["acme"]), {"username": "nora", "role": "reviewer"})
    assert _role("acme", people["nora"]) == "reviewer"
    assert AuditEvent.objects.filter(event_type="space.role_changed", snippet="nora").exists()


def test_an_unknown_role_is_refused_naming_the_roles(people):
    response = _as(people["rita"]).post(
        reverse("space_member_add", args=["acme"]), {"username": "nora", "role": "boss"}, follow=True
    )
    assert "one of owner, reviewer, reader" in _messages(response)
    assert _role("acme", people["nora"]) is None


def test_a_reviewer_may_not_add_members_and_is_told_why(people):
    response = _as(people["sam"]).post(
        reverse("space_member_add", args=["acme"]), {"username": "nora", "role": "owner"}, follow=True
    )
    assert "Only an owner of 'acme' manages its members" in _messages(response)
    assert _role("acme", people["nora"]) is None


def test_a_non_member_changing_members_gets_404_and_changes_nothing(people):
    nora = _as(people["nora"])
    add = nora.post(reverse("space_member_add", args=["acme"]), {"username": "nora", "role": "owner"})
    remove = nora.post(reverse("space_member_remove", args=["acme", "sam"]))
    rule = nora.post(reverse("space_approvals", args=["acme"]), {"required_approvals": "1"})
    assert add.status_code == remove.status_code == rule.status_code == 404
    assert _role("acme", people["nora"]) is None and _role("acme", people["sam"]) == "reviewer"


def test_an_owner_removes_a_member_and_their_agents_lose_the_space(people):
    bot, _token = actions.create_agent("sam-bot", spaces=["acme"], actor=people["sam"])
    actions.create_space("", kind="personal", name="Sam", actor=people["sam"])
    actions.grant_space(bot, "personal:sam", actor=people["sam"])
    response = _as(people["rita"]).post(reverse("space_member_remove", args=["acme", "sam"]), follow=True)
    assert "Removed sam from acme. Their agents lost this space: sam-bot." in _messages(response)
    assert _role("acme", people["sam"]) is None
    assert Agent.objects.get(pk=bot.pk).spaces == ["personal:sam"]


def test_the_last_owner_cannot_be_removed(people):
    response = _as(people["rita"]).post(reverse("space_member_remove", args=["acme", "rita"]), follow=True)
    assert "rita is the last owner of acme; add another owner first." in _messages(response)
    assert _role("acme", people["rita"]) == "owner"


# --------------------------------------------------------------------------- the approval rule


def test_two_approvals_with_one_approver_is_refused_with_the_livability_reason(people):
    rita = _as(people["rita"])
    rita.post(reverse("space_member_add", args=["acme"]), {"username": "sam", "role": "reader"})
    response = rita.post(reverse("space_approvals", args=["acme"]), {"required_approvals": "2"}, follow=True)
    assert "Refused: acme needs two approvals, and this would leave 1 person who could approve" in _messages(response)
    assert Space.objects.get(slug="acme").required_approvals == 1


def test_an_owner_sets_two_approvals_and_a_removal_that_would_break_it_is_refused(people):
    rita = _as(people["rita"])
    set_two = rita.post(reverse("space_approvals", args=["acme"]), {"required_approvals": "2"}, follow=True)
    assert "acme now needs 2 approvals." in _messages(set_two)
    assert Space.objects.get(slug="acme").required_approvals == 2
    assert 'id="space-approvers">rita, sam' in set_two.text
    removed = rita.post(reverse("space_member_remove", args=["acme", "sam"]), follow=True)
    assert "Refused: acme needs two approvals" in _messages(removed)
    assert _role("acme", people["sam"]) == "reviewer"
    demoted = rita.post(reverse("space_member_add", args=["acme"]), {"username": "sam", "role": "reader"}, follow=True)
    assert "Refused: acme needs two approvals" in _messages(demoted)
    assert _role("acme", people["sam"]) == "reviewer"


def test_a_non_number_rule_is_refused_naming_what_is_allowed(people):
    response = _as(people["rita"]).post(
        reverse("space_approvals", args=["acme"]), {"required_approvals": "many"}, follow=True
    )
    assert "required_approvals: got 'many'; 1 or 2" in _messages(response)


def test_a_reviewer_may_not_change_the_approval_rule(people):
    response = _as(people["sam"]).post(
        reverse("space_approvals", args=["acme"]), {"required_approvals": "2"}, follow=True
    )
    assert "Only an owner of 'acme'" in _messages(response)
    assert Space.objects.get(slug="acme").required_approvals == 1


# --------------------------------------------------------------------------- agents' grants


def test_a_person_grants_and_takes_back_a_space_for_their_own_agent(people):
    actions.create_space("", kind="personal", name="Sam", actor=people["sam"])
    bot, _token = actions.create_agent("sam-bot", spaces=["personal:sam"], actor=people["sam"])
    sam = _as(people["sam"])
    page = sam.get(reverse("space_detail", args=["acme"]))
    assert f'id="my-agent-{bot.pk}"' in page.text and "Grant acme" in page.text
    granted = sam.post(reverse("space_grant", args=["acme"]), {"agent": "sam-bot", "op": "grant"}, follow=True)
    assert "Agent sam-bot may now read and propose in acme." in _messages(granted)
    assert "acme" in Agent.objects.get(pk=bot.pk).spaces
    # The owner sees which agents read her space.
    assert f'id="granted-{bot.pk}"' in _as(people["rita"]).get(reverse("space_detail", args=["acme"])).text
    sam.post(reverse("space_grant", args=["acme"]), {"agent": "sam-bot", "op": "revoke"})
    assert Agent.objects.get(pk=bot.pk).spaces == ["personal:sam"]
    assert AuditEvent.objects.filter(event_type="agent.grant_revoked").count() == 1


def test_a_grant_that_would_make_a_two_approval_space_unlivable_is_refused(people):
    actions.set_required_approvals("acme", 2, actor=people["rita"])
    actions.create_space("", kind="personal", name="Sam", actor=people["sam"])
    bot, _token = actions.create_agent("sam-bot", spaces=["personal:sam"], actor=people["sam"])
    response = _as(people["sam"]).post(reverse("space_grant", args=["acme"]), {"agent": "sam-bot"}, follow=True)
    assert "acme needs two approvals, and the new grant's agent's proposals there could be approved by only 1" in (
        _messages(response)
    )
    assert Agent.objects.get(pk=bot.pk).spaces == ["personal:sam"]


def test_a_person_cannot_change_another_persons_agent_grants(people):
    bot, _token = actions.create_agent("rita-bot", spaces=["team"], actor=people["rita"])
    response = _as(people["sam"]).post(reverse("space_grant", args=["acme"]), {"agent": "rita-bot"}, follow=True)
    assert "You have no active agent named 'rita-bot'." in _messages(response)
    assert Agent.objects.get(pk=bot.pk).spaces == ["team"]


def test_a_non_member_cannot_grant_a_space_it_does_not_see(people):
    actions.create_space("", kind="personal", name="Nora", actor=people["nora"])
    actions.create_agent("nora-bot", spaces=["personal:nora"], actor=people["nora"])
    response = _as(people["nora"]).post(reverse("space_grant", args=["acme"]), {"agent": "nora-bot"})
    assert response.status_code == 404
    assert Agent.objects.get(name="nora-bot").spaces == ["personal:nora"]


# --------------------------------------------------------------------------- two-person cards


def _two_person(people):
    """acme needs two approvals; rita's agent proposes there, so sam and nora
    (reviewers) are the two who may approve it, never rita."""
    actions.add_member("acme", people["nora"], role="reviewer", actor=people["rita"])
    actions.set_required_approvals("acme", 2, actor=people["rita"])
    bot, _token = actions.create_agent("acme-bot", spaces=["acme"], actor=people["rita"])
    proposal = actions.propose_create(
        agent=bot,
        reason="From the client handbook.",
        kind="fact",
        space="acme",
        title="Acme deploys on Tuesdays",
        body="The Acme billing API deploys every Tuesday at 10:00 UTC after the standup.",
        tags=["deploy"],
    )
    return proposal


@pytest.fixture(scope="class")
def two_person_world(people_world, django_db_blocker):
    """``_two_person``'s rule and proposal, on the module's people, made once for the class."""
    yield from shared(lambda: _two_person(people_world), django_db_blocker)


def _card(user, proposal) -> str:
    page = _as(user).get(reverse("home"))
    assert page.status_code == 200
    return page.text


def _offers_accept(text, proposal) -> bool:
    return f'action="{reverse("proposal_accept", args=[proposal.public_id])}"' in text


class TestTwoPersonCards:
    """The tests over ``_two_person``'s proposal, made once for the class."""

    @pytest.fixture
    def two_person(self, two_person_world, people):
        return fresh(two_person_world)

    def test_the_agents_person_is_not_offered_accept_and_is_told_who_may_approve(self, people, two_person):
        text = _card(people["rita"], two_person)
        assert f'id="approvals-{two_person.pk}">0 of 2 approvals' in text
        assert 'Next approval from: <span class="approvers">nora, sam</span>' in text
        assert "you own agent &#x27;acme-bot&#x27;" in text
        assert not _offers_accept(text, two_person)
        # Nor an edited accept: the policy refuses it where two must approve.
        assert reverse("proposal_revise", args=[two_person.public_id]) not in text

    def test_after_the_first_approval_only_the_other_reviewer_is_offered_accept(self, people, two_person):
        sam = _as(people["sam"])
        assert _offers_accept(sam.get(reverse("home")).text, two_person)
        sam.post(reverse("proposal_accept", args=[two_person.public_id]))
        two_person.refresh_from_db()
        assert two_person.state == "pending"
        mine = sam.get(reverse("home")).text
        assert "1 of 2 approvals: accepted by sam" in mine
        assert "You already accepted" in mine and not _offers_accept(mine, two_person)
        theirs = _card(people["nora"], two_person)
        assert 'Next approval from: <span class="approvers">nora</span> (you may give it)' in theirs
        assert _offers_accept(theirs, two_person)
        _as(people["nora"]).post(reverse("proposal_accept", args=[two_person.public_id]))
        two_person.refresh_from_db()
        assert two_person.state == "accepted"

    def test_a_card_where_nobody_can_give_the_next_approval_says_so(self, people, two_person, django_user_model):
        # Deactivating an account is not refused by the livability check: the card must tell.
        django_user_model.objects.filter(pk=people["nora"].pk).update(is_active=False)
        text = _card(people["sam"], two_person)
        assert 'Next approval from: <span class="approvers">sam</span> (you may give it)' in text
        _as(people["sam"]).post(reverse("proposal_accept", args=[two_person.public_id]))
        assert "Nobody here can give the next approval" in _card(people["rita"], two_person)

    def test_waiting_for_me_lists_what_my_accept_would_make_true(self, people, two_person):
        # Nothing is waiting before a first approval.
        assert 'id="waiting-none"' in _as(people["nora"]).get(reverse("waiting_for_me")).text
        actions.accept_proposal(two_person, actor=people["sam"])
        nora = _as(people["nora"]).get(reverse("waiting_for_me"))
        assert f'id="waiting-{two_person.pk}"' in nora.text and "accepted by sam" in nora.text
        # Not for the one who accepted, nor for the agent's person, nor for someone outside the space.
        for who in ("sam", "rita"):
            assert f'id="waiting-{two_person.pk}"' not in _as(people[who]).get(reverse("waiting_for_me")).text
        outsider = get_user_model().objects.create_user("otto", password="a-long-password-4", is_staff=True)
        text = _as(outsider).get(reverse("waiting_for_me")).text
        assert f'id="waiting-{two_person.pk}"' not in text and "Acme deploys" not in text
        actions.accept_proposal(two_person, actor=people["nora"])
        assert 'id="waiting-none"' in _as(people["nora"]).get(reverse("waiting_for_me")).text

    def test_the_decisions_page_says_why_a_first_approval_is_not_listed(self, people, two_person):
        decisions = reverse("recent_decisions")
        before = _as(people["sam"]).get(decisions).text
        assert 'id="first-approvals-note"' in before and "you have given" not in before
        assert f'href="{reverse("waiting_for_me")}"' in before
        actions.accept_proposal(two_person, actor=people["sam"])
        after = _as(people["sam"]).get(decisions).text
        assert "(you have given 1 such approval)" in after
        assert "Acme deploys on Tuesdays" not in after  # a first approval decides nothing: not a row
        # Where every space needs one approval, the note would only confuse.
        outsider = get_user_model().objects.create_user("otto", password="a-long-password-4", is_staff=True)
        assert 'id="first-approvals-note"' not in _as(outsider).get(decisions).text


def test_a_one_approval_space_shows_no_two_person_line(people):
    bot, _token = actions.create_agent("acme-bot", spaces=["acme"], actor=people["rita"])
    proposal = actions.propose_create(
        agent=bot,
        reason="From the client handbook.",
        kind="fact",
        space="acme",
        title="Acme deploys on Tuesdays",
        body="The Acme billing API deploys every Tuesday at 10:00 UTC after the standup.",
        tags=["deploy"],
    )
    text = _card(people["sam"], proposal)
    assert f'id="two-person-{proposal.pk}"' not in text and _offers_accept(text, proposal)
