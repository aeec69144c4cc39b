"""What one person may learn of another's agents, grants and sign-ins
(issue 16, the remainder): OAuth grants revoked only by who may manage the
agent, the settings page's lockouts, agent names that tell nothing of
another person's agent, the "as an agent saw it" page, and the agents rule
in SQL. Uses test_spaces.py's two people and client spaces: sam reviews
northrail and owns personal:sam; rita owns acme and northrail."""

# ruff: noqa: F811  (test_spaces.py's ``clients`` fixture, imported, is every test's argument)
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from reviews import actions, space_access
from reviews.errors import InvalidTransition, ValidationFailed
from reviews.models import Agent, AuditEvent
from tests.shared_data import shared

from .test_spaces import MARKERS, build_clients, clients  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def clients_world(django_db_setup, django_db_blocker):
    """test_spaces.py's ``build_clients()``, made once for this module (every test here uses it)."""
    yield from shared(build_clients, django_db_blocker)


def _grant(agent, person):
    from reviews.actions import oauth

    oauth.save_oauth_client(
        f"client-{agent.name}",
        registration="dynamic",
        client_name="Test Connector",
        redirect_uris=["https://client.example/cb"],
        metadata={},
    )
    grant, _code = oauth.grant_oauth_consent(
        actor=person,
        client_id=f"client-{agent.name}",
        redirect_uri="https://client.example/cb",
        redirect_uri_explicit=True,
        code_challenge="x" * 43,
        resource=oauth.mcp_resource(),
        scopes=list(agent.spaces),
        agent=agent,
    )
    return grant


# --------------------------------------------------------------------------- 2. OAuth grants


def test_a_person_cannot_revoke_a_grant_of_an_agent_they_may_not_manage(clients):
    from reviews.actions import oauth

    grant = _grant(clients["bots"]["acme"], clients["rita"])
    with pytest.raises(ValidationFailed) as theirs:
        oauth.revoke_oauth_grant(grant.public_id, actor=clients["sam"])
    with pytest.raises(ValidationFailed) as unknown:
        oauth.revoke_oauth_grant("gr_nosuchgrant000", actor=clients["sam"])
    assert theirs.value.message.replace(grant.public_id, "X") == unknown.value.message.replace("gr_nosuchgrant000", "X")
    grant.refresh_from_db()
    assert grant.revoked_at is None
    assert not AuditEvent.objects.filter(event_type="oauth.revoked").exists()


def test_the_agents_owner_and_a_space_owner_may_revoke_a_grant(clients):
    from reviews.actions import oauth

    north = _grant(clients["bots"]["northrail"], clients["sam"])
    assert oauth.revoke_oauth_grant(north.public_id, actor=clients["rita"]).revoked_at  # she owns northrail
    own = _grant(clients["bots"]["personal:sam"], clients["sam"])
    assert oauth.revoke_oauth_grant(own.public_id, actor=clients["sam"]).revoked_at


def test_the_revoke_button_for_anothers_grant_changes_nothing(clients):
    grant = _grant(clients["bots"]["acme"], clients["rita"])
    browser = Client()
    browser.force_login(clients["sam"])
    browser.post(reverse("oauth_grant_revoke", args=[grant.public_id]))
    grant.refresh_from_db()
    assert grant.revoked_at is None


# --------------------------------------------------------------------------- 3. lockouts


def _lock(username, address):
    from axes.models import AccessAttempt
    from django.conf import settings
    from django.utils import timezone

    AccessAttempt.objects.create(
        username=username,
        ip_address=address,
        user_agent="test",
        failures_since_start=settings.AXES_FAILURE_LIMIT,
        attempt_time=timezone.now(),
    )


def test_the_settings_page_shows_a_person_only_their_own_lockout(clients):
    sams, ritas = Client(), Client()
    sams.force_login(clients["sam"])  # (signing in clears one's own failures: lock afterwards)
    ritas.force_login(clients["rita"])
    _lock("rita", "203.0.113.7")
    _lock("sam", "203.0.113.8")
    page = sams.get(reverse("site_settings")).content.decode()
    assert "username <code>sam</code>" in page
    assert "rita</code>" not in page and "203.0.113" not in page
    page = ritas.get(reverse("site_settings")).content.decode()  # a superuser: the operator sees every one
    assert "username <code>sam</code>" in page and "address <code>203.0.113.7</code>" in page


def test_a_person_may_clear_only_their_own_lockout(clients):
    from axes.models import AccessAttempt

    _lock("rita", "203.0.113.7")
    for target in ({"username": "rita"}, {"address": "203.0.113.7"}, {"username": "nobody"}):
        with pytest.raises(InvalidTransition, match="Only a superuser"):
            actions.clear_login_lockout(actor=clients["sam"], **target)
    assert AccessAttempt.objects.filter(username="rita").exists()
    _lock("sam", "203.0.113.8")
    assert actions.clear_login_lockout(actor=clients["sam"], username="sam") == 1


# --------------------------------------------------------------------------- 4. agent names


def test_a_name_taken_by_anothers_agent_is_refused_as_ones_own_would_be(clients):
    sam = clients["sam"]
    with pytest.raises(ValidationFailed) as theirs:
        actions.create_agent("acme-bot", spaces=["northrail"], actor=sam)  # rita's
    with pytest.raises(ValidationFailed) as mine:
        actions.create_agent("north-bot", spaces=["northrail"], actor=sam)  # his own
    assert theirs.value.fields["name"].replace("acme-bot", "X") == mine.value.fields["name"].replace("north-bot", "X")
    message = theirs.value.fields["name"]
    assert "rita" not in message and "acme" not in message.replace("acme-bot", "")
    suggested = message.rsplit("e.g. ", 1)[1].strip("'")
    assert suggested == "acme-bot-sam"
    agent, _token = actions.create_agent(suggested, spaces=["northrail"], actor=sam)
    assert agent.owner == sam


def test_the_reserved_import_name_is_refused_in_the_words_of_a_taken_one(clients):
    sam = clients["sam"]
    with pytest.raises(ValidationFailed) as reserved:
        actions.create_agent("import", spaces=["northrail"], actor=sam)
    with pytest.raises(ValidationFailed) as taken:
        actions.create_agent("acme-bot", spaces=["northrail"], actor=sam)
    assert reserved.value.fields["name"].replace("import", "X") == taken.value.fields["name"].replace("acme-bot", "X")


def test_the_inbox_agent_filter_answers_anothers_agent_as_an_unknown_one(clients):
    """sam reviews northrail: he may filter by his own agents and by any agent
    whose proposals he decides, but rita's acme-bot (acme only) is as unknown
    to the filter as a made-up name; before, only a made-up name was refused."""
    rita_north, _token = actions.create_agent("rita-north", spaces=["northrail"], actor=clients["rita"])
    actions.propose_create(
        agent=rita_north,
        reason="From the handbook.",
        kind="fact",
        space="northrail",
        title="Northrail on-call rota",
        body="The northrail on-call rota changes every Monday at 09:00 UTC.",
        tags=["oncall"],
    )
    browser = Client()
    browser.force_login(clients["sam"])

    def says(name: str) -> tuple[int, str]:
        response = browser.get(reverse("home"), {"agent": name})
        text = response.content.decode().replace("&#x27;", "'")
        refused = f"agent='{name}': no agent has that name"
        return response.status_code, refused.replace(name, "X") if refused in text else ""

    assert says("acme-bot") == says("no-such-bot") == (400, "agent='X': no agent has that name")
    assert says("north-bot") == (200, "")  # his own
    assert says("rita-north") == (200, "")  # not his, but he decides its proposals


# --------------------------------------------------------------------------- 5. records as an agent saw them


def test_as_seen_offers_only_agents_and_spaces_the_person_sees(clients):
    browser = Client()
    browser.force_login(clients["sam"])
    page = browser.get(reverse("records_as_of"))
    assert [a.name for a in page.context["agents"]] == ["north-bot", "sam-bot"]
    assert page.context["spaces"] == ["personal:sam", "northrail"]
    assert "acme" not in page.content.decode().lower()


def test_as_seen_answers_anothers_agent_as_an_unknown_one(clients):
    browser = Client()
    browser.force_login(clients["sam"])
    day = timezone.now().isoformat()
    theirs = browser.get(reverse("records_as_of"), {"as_of": day, "agent": "acme-bot"})
    unknown = browser.get(reverse("records_as_of"), {"as_of": day, "agent": "no-such-bot"})
    assert theirs.status_code == unknown.status_code == 400
    assert theirs.context["errors"]["agent"].replace("acme-bot", "X") == unknown.context["errors"]["agent"].replace(
        "no-such-bot", "X"
    )
    for word in MARKERS["acme"]:
        assert word not in theirs.content.decode().lower()


def test_as_seen_reads_only_readable_spaces_even_through_an_agent(clients):
    """rita sees sam-bot once it is granted northrail (she owns it), but not
    what it reads in sam's personal space; a space ticked by hand that she
    cannot read is dropped like an unknown one."""
    actions.grant_space(clients["bots"]["personal:sam"], "northrail", actor=clients["sam"])
    browser = Client()
    browser.force_login(clients["rita"])
    day = timezone.now().isoformat()
    page = browser.get(reverse("records_as_of"), {"as_of": day, "agent": "sam-bot"})
    assert page.status_code == 200 and page.context["reader_spaces"] == ["northrail"]
    text = page.content.decode().lower()
    assert "wombat" in text
    for word in MARKERS["personal:sam"]:
        assert word not in text
    by_hand = browser.get(reverse("records_as_of"), {"as_of": day, "spaces": ["personal:sam"]})
    assert by_hand.status_code == 400 and "spaces" in by_hand.context["errors"]
    search = browser.get(reverse("records_as_of"), {"as_of": day, "agent": "sam-bot", "q": "release freeze"})
    assert "samsecret" not in search.content.decode().lower()


# --------------------------------------------------------------------------- 10. the agents rule in SQL


def test_the_agents_queryset_matches_the_one_rule_for_every_person(clients):
    actions.grant_space(clients["bots"]["personal:sam"], "northrail", actor=clients["sam"])
    everyone = list(Agent.objects.all())
    for person in (clients["sam"], clients["rita"]):
        in_sql = set(space_access.agents_seen_by(person).values_list("name", flat=True))
        assert in_sql == {a.name for a in everyone if space_access.sees_agent(person, a)}
    assert set(space_access.agents_seen_by(clients["sam"]).values_list("name", flat=True)) == {"north-bot", "sam-bot"}


def test_a_space_slug_inside_another_slug_grants_no_view(clients, django_user_model):
    """The SQL rule matches whole grant entries: owning "acme" shows no agent granted "acme-labs"."""
    rita = clients["rita"]
    actions.create_space("acme-labs", kind="team", name="Acme Labs", actor=rita)
    other = django_user_model.objects.create_user("olga", password="a-long-password-3", is_staff=True)
    actions.add_member("acme-labs", other, role="owner", actor=rita)
    actions.remove_member("acme-labs", rita, actor=other)
    actions.create_agent("labs-bot", spaces=["acme-labs"], actor=other)
    assert "labs-bot" not in set(space_access.agents_seen_by(rita).values_list("name", flat=True))


# --------------------------------------------------------------------------- 7 and 8 without JavaScript


def test_a_plain_post_moves_a_record_and_the_form_offers_only_deciding_spaces(clients):
    rita, sam = clients["rita"], clients["sam"]
    record = clients["records"]["northrail"][0]
    browser = Client()
    browser.force_login(sam)
    page = browser.get(reverse("record_detail", args=[record.public_id]))
    assert page.context["move_targets"] == ["personal:sam"]  # not acme, not northrail itself
    acme = clients["records"]["acme"][0]
    assert browser.get(reverse("record_detail", args=[acme.public_id])).status_code == 404
    refused = browser.post(reverse("record_move", args=[acme.public_id]), {"space": "northrail", "note": "mine now"})
    assert refused.status_code == 302
    acme.refresh_from_db()
    assert acme.space == "acme" and acme.status == "approved"
    browser.force_login(rita)
    answer = browser.post(reverse("record_move", args=[record.public_id]), {"space": "acme", "note": "Acme's now"})
    record.refresh_from_db()
    moved = record.superseded_by
    assert moved is not None and moved.space == "acme"
    assert answer.status_code == 302 and answer["Location"] == reverse("record_detail", args=[moved.public_id])


def third_reviewer(rita):
    """north-bot is sam's: two approvals there need two people besides sam."""
    from django.contrib.auth import get_user_model

    tia = get_user_model().objects.create_user("tia", password="a-long-password-9", is_staff=True)
    actions.add_member("northrail", tia, role="reviewer", actor=rita)


def test_a_first_of_two_approvals_by_plain_post_is_counted_not_an_error(clients):
    """It used to answer 500: the view looked for the decision's Undo, and a first approval is no decision."""
    rita = clients["rita"]
    third_reviewer(rita)
    actions.set_required_approvals("northrail", 2, actor=rita)
    pending = clients["pending"]["northrail"]  # from north-bot, sam's agent: rita may approve
    browser = Client()
    browser.force_login(rita)
    answer = browser.post(reverse("proposal_accept", args=[pending.public_id]))
    assert answer.status_code == 302
    pending.refresh_from_db()
    assert pending.state == "pending"
    assert "1 of 2 approvals: accepted by rita" in browser.get(reverse("home")).content.decode()
    htmx = browser.post(reverse("proposal_accept", args=[pending.public_id]), HTTP_HX_REQUEST="true")
    assert htmx.status_code == 200 and "You already accepted" in htmx.content.decode()


def test_a_first_of_two_approvals_in_bulk_is_counted_not_an_error(clients):
    """The bulk accept looked for each decision's Undo too (a 500), though a first approval decides nothing."""
    rita = clients["rita"]
    third_reviewer(rita)
    actions.set_required_approvals("northrail", 2, actor=rita)
    pending = clients["pending"]["northrail"]
    browser = Client()
    browser.force_login(rita)
    answer = browser.post(reverse("proposal_bulk"), {"op": "accept", "ids": [pending.public_id]}, follow=True)
    assert answer.status_code == 200
    pending.refresh_from_db()
    assert pending.state == "pending"
    assert "Your approval is counted for 1, each needs another reviewer" in answer.content.decode()
