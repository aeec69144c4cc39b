"""Person-facing surfaces narrowed to the viewer's spaces (issue 16, second
step): recent decisions and undo, the quality page, the inbox hints, the
agents page, the nav counts, a record's history, the admin, MCP and the
consent page. Uses test_spaces.py's two people and two client spaces: sam
reviews northrail and owns personal:sam; rita owns acme and northrail."""

# ruff: noqa: F811  (test_spaces.py's ``clients`` fixture, imported, is every test's argument)
from __future__ import annotations

import json
import re

import pytest

from reviews import actions
from reviews.errors import InvalidTransition, NotFound
from tests.shared_data import shared

from .test_spaces import MARKERS, build_clients, clients  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def clients_world(django_db_setup, django_db_blocker):
    """test_spaces.py's ``build_clients()``, made once for this module (every test here uses it)."""
    yield from shared(build_clients, django_db_blocker)


def assert_none_of(text: str, slug: str, where: str) -> None:
    for word in MARKERS[slug]:
        assert word not in text.lower(), f"{slug}'s {word!r} on {where}"


# --------------------------------------------------------------------------- 1. recent decisions and undo


def test_a_decision_in_a_space_left_since_vanishes_from_recent_decisions(clients, client):
    sam = clients["sam"]
    actions.accept_proposal(clients["pending"]["northrail"], actor=sam)
    client.force_login(sam)
    assert "wombat" in client.get("/decisions/").content.decode().lower()
    actions.remove_member("northrail", sam, actor=clients["rita"])
    page = client.get("/decisions/").content.decode()
    assert_none_of(page, "northrail", "sam's recent decisions after leaving northrail")


def test_undo_refuses_who_left_the_space_as_an_unknown_id(clients):
    sam = clients["sam"]
    proposal = clients["pending"]["northrail"]
    event = actions.decision_event(actions.accept_proposal(proposal, actor=sam))
    actions.remove_member("northrail", sam, actor=clients["rita"])
    assert actions.undo_refusal(event, actor=sam)
    with pytest.raises(NotFound):
        actions.undo_decision(event, actor=sam)
    proposal.refresh_from_db()
    assert proposal.state == "accepted"


def test_undo_refuses_who_became_a_reader(clients):
    sam = clients["sam"]
    event = actions.decision_event(actions.accept_proposal(clients["pending"]["northrail"], actor=sam))
    actions.add_member("northrail", sam, role="reader", actor=clients["rita"])
    with pytest.raises(InvalidTransition, match="reader"):
        actions.undo_decision(event, actor=sam)
    proposal = clients["pending"]["northrail"]
    proposal.refresh_from_db()
    assert proposal.state == "accepted"


def test_undo_still_works_for_who_keeps_the_role(clients):
    sam = clients["sam"]
    proposal = clients["pending"]["northrail"]
    actions.undo_decision(actions.decision_event(actions.accept_proposal(proposal, actor=sam)), actor=sam)
    proposal.refresh_from_db()
    assert proposal.state == "pending"


# --------------------------------------------------------------------------- 2. quality page and hints


def test_the_quality_page_shows_only_the_viewers_spaces(clients, client):
    client.force_login(clients["sam"])
    for url in ("/quality/", "/quality/?space=acme"):
        page = client.get(url)
        assert page.status_code == 200
        assert_none_of(page.content.decode(), "acme", f"sam's {url}")
        assert "acme" not in page.content.decode().lower()


def test_the_hint_names_no_look_alike_of_another_space(clients, client):
    """sam's northrail proposal is a near copy of acme's record and acme's
    pending proposal: neither may be named to him."""
    acme_record = clients["records"]["acme"][0]
    proposal = actions.propose_create(
        agent=clients["bots"]["northrail"],
        reason="From the client handbook.",
        kind="fact",
        space="northrail",
        title=acme_record.title.replace("quokka", "wombat"),
        body=acme_record.body.replace("quokka", "wombat"),
        tags=["deploy", "billing"],
    )
    client.force_login(clients["rita"])
    seen_by_rita = client.get(f"/proposals/{proposal.public_id}/similar").content.decode()
    assert acme_record.public_id in seen_by_rita  # the hint works for who may read both
    client.force_login(clients["sam"])
    page = client.get(f"/proposals/{proposal.public_id}/similar")
    assert page.status_code == 200
    text = page.content.decode()
    assert acme_record.public_id not in text and clients["pending"]["acme"].public_id not in text
    assert_none_of(text, "acme", "sam's hint")


# --------------------------------------------------------------------------- 3. agents, nav counts, settings


def test_the_agents_page_shows_own_agents_and_those_granted_a_space_one_owns(clients, client):
    """sam sees his two bots, not acme-bot; rita (owner of northrail) sees
    sam-bot once it is granted northrail, but not its personal grant."""
    sam, rita = clients["sam"], clients["rita"]
    actions.grant_space(clients["bots"]["personal:sam"], "northrail", actor=sam)
    client.force_login(sam)
    page = client.get("/agents/").content.decode()
    assert "north-bot" in page and "sam-bot" in page and "acme-bot" not in page
    assert 'id="agents-stat">2<' in client.get("/").content.decode()
    client.force_login(rita)
    page = client.get("/agents/").content.decode()
    assert "acme-bot" in page and "sam-bot" in page
    assert "personal:sam" not in page


def test_a_person_cannot_revoke_an_agent_they_are_not_shown(clients, client):
    acme_bot = clients["bots"]["acme"]
    with pytest.raises(NotFound) as theirs:
        actions.revoke_agent(acme_bot.name, actor=clients["sam"])
    with pytest.raises(NotFound) as nobody:
        actions.revoke_agent("no-such-bot", actor=clients["sam"])
    assert theirs.value.message.replace("acme-bot", "X") == nobody.value.message.replace("no-such-bot", "X")
    acme_bot.refresh_from_db()
    assert acme_bot.is_active
    actions.revoke_agent(clients["bots"]["northrail"].name, actor=clients["sam"])  # his own


def test_changed_outside_counts_only_the_viewers_spaces(clients, client):
    from reviews.models import Record

    theirs = clients["records"]["acme"][0]
    Record.objects.filter(pk=theirs.pk).update(body=theirs.body + " Edited by hand (quokka).")
    client.force_login(clients["rita"])
    assert clients["records"]["acme"][0].public_id in client.get("/edited/").content.decode()
    client.force_login(clients["sam"])
    assert client.get("/").context["edited_count"] == 0
    page = client.get("/edited/")
    assert page.context["total"] == 0
    assert theirs.public_id not in page.content.decode()
    assert_none_of(page.content.decode(), "acme", "sam's changed-outside page")


def test_the_settings_page_gives_index_counts_only_to_the_operator(clients, client):
    client.force_login(clients["sam"])
    page = client.get("/settings/").content.decode()
    assert " records · " not in page and " chunks · " not in page
    client.force_login(clients["rita"])  # a superuser
    assert " records · " in client.get("/settings/").content.decode()


# --------------------------------------------------------------------------- 4. a moved record's history


def test_a_moved_records_page_names_nothing_of_the_space_it_came_from(clients, client):
    """rita moves an acme record into northrail; sam reads northrail, not acme."""
    old = clients["records"]["acme"][1]
    moved = actions.move_record(old, actor=clients["rita"], space="northrail", note="Belongs to the shared client.")
    client.force_login(clients["sam"])
    page = client.get(f"/records/{moved.public_id}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "record.moved" in text or "moved" in text.lower()
    assert old.public_id not in text, "the predecessor's id in another space"
    # Its text and tags crossed on purpose ("acme-only" is a tag); the space's slug and name did not.
    assert not re.search(r"\bacme\b(?!-only)", text.lower()), re.findall(r".{60}\bacme\b(?!-only).{60}", text.lower())
    client.force_login(clients["rita"])
    text = client.get(f"/records/{moved.public_id}/").content.decode()
    assert old.public_id in text and "acme" in text  # who reads both sees where it came from


def test_a_record_moved_away_names_neither_where_it_went_nor_its_new_id(clients, client):
    """rita moves a northrail record into acme, closing a pending retirement
    of it; sam (northrail only) reads the old record's page."""
    from mcp_bridge import agent_api

    old = clients["records"]["northrail"][1]
    north_bot = clients["bots"]["northrail"]
    retire = actions.propose_retirement(old, agent=north_bot, reason="The repositories were archived.")
    moved = actions.move_record(old, actor=clients["rita"], space="acme", note="Acme took this over.")
    client.force_login(clients["sam"])
    page = client.get(f"/records/{old.public_id}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert moved.public_id not in text, "the successor's id in another space"
    assert not re.search(r"\\bacme\\b(?!-only)", text.lower()), re.findall(r".{80}\\bacme\\b.{40}", text.lower())
    told = json.dumps(agent_api.proposal_status(north_bot, retire.public_id))
    assert moved.public_id not in told and not re.search(r"\bacme\b", told.lower()), told


# --------------------------------------------------------------------------- 5. the admin


@pytest.fixture
def sam_may_view_the_admin(clients):
    from django.contrib.auth.models import Permission

    sam = clients["sam"]
    for codename in ("view_record", "view_proposal", "view_agent", "view_auditevent", "view_user"):
        sam.user_permissions.add(Permission.objects.get(codename=codename))
    return sam


@pytest.mark.parametrize("model", ["record", "proposal", "agent", "auditevent", "user"])
def test_a_staff_member_sees_only_their_spaces_rows_in_the_admin(
    clients, sam_may_view_the_admin, client, model, django_user_model
):
    django_user_model.objects.create_user("outsider-olga", password="a-long-password-9", is_staff=True)
    client.force_login(sam_may_view_the_admin)
    page = client.get(f"/admin/reviews/{model}/" if model != "user" else "/admin/auth/user/")
    assert page.status_code == 200
    text = page.content.decode()
    assert_none_of(text, "acme", f"sam's admin {model} list")
    assert "acme-bot" not in text and clients["records"]["acme"][0].public_id not in text
    assert "outsider-olga" not in text  # an account in none of his spaces
    if model in ("record", "auditevent"):
        assert "wombat" in text.lower()  # his own spaces' rows are there


def test_another_spaces_row_is_not_found_in_the_admin(clients, sam_may_view_the_admin, client):
    client.force_login(sam_may_view_the_admin)
    theirs = clients["records"]["acme"][0]
    page = client.get(f"/admin/reviews/record/{theirs.pk}/change/")
    nobody = client.get("/admin/reviews/record/999999/change/")
    assert (page.status_code, page.get("Location")) == (nobody.status_code, nobody.get("Location"))
    assert "quokka" not in page.content.decode().lower()
    client.force_login(clients["rita"])  # a superuser sees every row
    assert "quokka" in client.get("/admin/reviews/record/").content.decode().lower()


# --------------------------------------------------------------------------- 6. the OAuth consent page


@pytest.fixture
def consent_request(clients):
    from reviews.actions import oauth

    oauth.save_oauth_client(
        "client-123",
        registration="dynamic",
        client_name="Test Connector",
        redirect_uris=["https://client.example/cb"],
        metadata={},
    )
    return oauth.sign_authorization_request(
        {
            "client_id": "client-123",
            "redirect_uri": "https://client.example/cb",
            "redirect_uri_explicit": True,
            "code_challenge": "x" * 43,
            "resource": oauth.mcp_resource(),
            "scopes": ["personal", "team"],
            "state": "st-1",
        }
    )


def test_the_consent_page_offers_the_persons_own_spaces_and_agents(clients, client, consent_request):
    client.force_login(clients["sam"])
    page = client.get("/oauth/consent", {"request": consent_request})
    assert page.status_code == 200
    assert page.context["scopes"] == ["personal:sam", "northrail"]
    assert page.context["values"]["scopes"] == ["personal:sam"]  # "personal" asked: his personal space
    text = page.content.decode()
    assert "acme" not in text.lower() and 'value="team"' not in text
    assert {a.name for a in page.context["agents"]} == {"north-bot", "sam-bot"}


def test_a_consent_grants_only_the_persons_spaces_as_their_own_agent(clients, client, consent_request):
    client.force_login(clients["sam"])
    form = {"request": consent_request, "decision": "allow"}
    as_theirs = client.post("/oauth/consent", {**form, "agent": "acme-bot", "scopes": ["northrail"]})
    assert as_theirs.status_code == 400 and b"no agent named" in as_theirs.content
    into_theirs = client.post("/oauth/consent", {**form, "agent": "new", "new_agent_name": "c1", "scopes": ["acme"]})
    assert into_theirs.status_code == 400
    granted = client.post("/oauth/consent", {**form, "agent": "new", "new_agent_name": "c2", "scopes": ["northrail"]})
    assert granted.status_code == 302 and "code=" in granted["Location"]


def test_import_markdown_takes_any_space_slug(clients, tmp_path):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    from reviews.models import Proposal

    note = tmp_path / "acme-oncall.md"
    note.write_text("# Acme on-call rota\n\nThe Acme on-call rota changes every Monday at 09:00 in the ops channel.\n")
    err = io.StringIO()
    call_command("import_markdown", str(tmp_path), "--space", "acme", stdout=io.StringIO(), stderr=err)
    made = Proposal.objects.get(title="Acme on-call rota")
    assert made.space == "acme"
    assert "deprecated" not in err.getvalue()
    with pytest.raises(CommandError, match="No space"):
        call_command("import_markdown", str(tmp_path), "--space", "nowhere", stdout=io.StringIO(), stderr=io.StringIO())
