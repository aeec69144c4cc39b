"""Person-facing surfaces narrowed to the viewer's spaces (issue 16, second
step): recent decisions and undo, the quality page, the inbox hints, the
agents page, the nav counts, a record's history, the admin, MCP and the
consent page. Uses test_spaces.py's two people and two client spaces: sam
reviews northrail and owns personal:sam; rita owns acme and northrail."""

# ruff: noqa: F811  (test_spaces.py's ``clients`` fixture, imported, is every test's argument)
from __future__ import annotations

import pytest

from reviews import actions
from reviews.errors import InvalidTransition, NotFound

from .test_spaces import MARKERS, clients  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


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
    for url in ("/quality/", "/quality/?scope=acme"):
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
        scope="northrail",
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
