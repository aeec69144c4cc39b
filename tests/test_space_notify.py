"""Notifications per person and space (issue 16): two people, two client
spaces with look-alike proposals; each person's e-mail (a real SMTP server on
loopback) and feed (a real feed parser) tell only of the spaces they decide
in, never a title of the other's space or of another person's personal
space; the webhook is the operator's and tells of every listed space."""

# ruff: noqa: F811  (test_spaces.py's ``clients`` fixture, imported, is an argument)
from __future__ import annotations

import email
from datetime import timedelta
from email import policy

import pytest
from django.utils import timezone

from notify import sender
from notify.models import Delivery
from reviews import actions

from .test_notify import receiver, smtp, webhook  # noqa: F401  (the fixtures)
from .test_spaces import MARKERS, build_clients, clients  # noqa: F401  (the fixture)


@pytest.fixture
def clients_world(db):
    """test_spaces.py's ``build_clients()``, made for each test as before (a few
    tests here; the notifier's batches read everything in the outbox)."""
    return build_clients()


pytestmark = pytest.mark.django_db


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.fixture
def two_people(clients, settings):
    """sam (now with an e-mail address) decides northrail and his personal
    space; rita decides acme and northrail. Every kind of space is listed."""
    sam = clients["sam"]
    sam.email = "sam@example.com"
    sam.save(update_fields=["email"])
    settings.VETTED_NOTIFY_SPACES = ["team", "system", "personal"]
    return clients


def _told(smtp_handler) -> dict[str, str]:
    """Recipient -> the whole text of what they were sent."""
    told: dict[str, str] = {}
    for envelope in smtp_handler.messages:
        message = email.message_from_bytes(envelope.content, policy=policy.default)
        text = message["Subject"] + message.get_body(("plain",)).get_content()
        for to in envelope.rcpt_tos:
            told[to] = told.get(to, "") + text.lower()
    return told


def _send_all():
    Delivery.objects.all().delete()
    made = sender.batch(later(2))
    sender.send_due(later(3))
    return made


def test_each_persons_email_tells_only_of_the_spaces_they_decide_in(two_people, smtp, settings):
    """sam reviews northrail and owns personal:sam; rita owns acme and
    northrail, never personal:sam. The fixture left one pending proposal in each."""
    settings.VETTED_NOTIFY_EMAIL = ["rita@example.com", "sam@example.com"]
    made = _send_all()
    assert len(made) == 2  # rita's and sam's messages differ: one each
    told = _told(smtp)
    assert set(told) == {"rita@example.com", "sam@example.com"}
    assert "quokka" in told["rita@example.com"] and "wombat" in told["rita@example.com"]
    for word in MARKERS["personal:sam"]:
        assert word not in told["rita@example.com"], "sam's personal space told to rita"
    assert "wombat" in told["sam@example.com"] and "samsecret" in told["sam@example.com"]
    for word in MARKERS["acme"]:
        assert word not in told["sam@example.com"], "acme told to sam"


def test_an_address_of_no_account_is_the_operators_and_told_every_listed_space(two_people, smtp, settings):
    settings.VETTED_NOTIFY_EMAIL = ["ops@example.com"]
    settings.VETTED_NOTIFY_SPACES = ["acme", "northrail"]  # by slug: personal:sam not listed
    _send_all()
    told = _told(smtp)["ops@example.com"]
    assert "quokka" in told and "wombat" in told and "samsecret" not in told


def test_a_person_who_leaves_a_space_is_no_longer_told_of_it(two_people, smtp, settings):
    settings.VETTED_NOTIFY_EMAIL = ["sam@example.com"]
    actions.remove_member("northrail", two_people["sam"], actor=two_people["rita"])
    actions.propose_create(
        agent=two_people["bots"]["acme"],
        reason="Heard in a call.",
        kind="fact",
        space="acme",
        title="Acme wombat-free note",
        body="Nothing here concerns sam at all, only the acme client.",
        tags=[],
    )
    _send_all()
    told = _told(smtp)["sam@example.com"]
    assert "samsecret" in told and "wombat" not in told and "quokka" not in told


def test_the_webhook_is_the_operators_and_tells_every_listed_space(two_people, webhook, settings):
    settings.VETTED_NOTIFY_SPACES = ["team"]  # by kind: acme and northrail, not personal:sam
    (made,) = _send_all()
    titles = " ".join(i["title"] for i in made.payload["items"]).lower()
    assert "quokka" in titles and "wombat" in titles and "samsecret" not in titles
    assert all(set(i) == {"id", "title", "agent", "action"} for i in made.payload["items"])


def test_each_persons_feed_lists_only_the_spaces_they_decide_in(two_people, client):
    import feedparser

    for person, theirs, not_theirs in (("sam", "wombat", ("quokka",)), ("rita", "quokka", ("samsecret",))):
        key = actions.rotate_feed_key(actor=two_people[person])
        feed = feedparser.parse(client.get(f"/feed/atom?key={key.secret}").content)
        titles = " ".join(entry.title for entry in feed.entries).lower()
        assert theirs in titles, person
        for word in not_theirs:
            assert word not in titles, f"{word} in {person}'s feed"


def test_the_settings_page_shows_the_outbox_and_addresses_only_to_the_operator(two_people, client, settings):
    settings.VETTED_NOTIFY_EMAIL = ["rita@example.com", "sam@example.com"]
    _send_all()
    client.force_login(two_people["sam"])
    page = client.get("/settings/").content.decode()
    assert 'id="notify-states"' not in page and 'id="notify-deliveries"' not in page
    assert "rita@example.com" not in page
    client.force_login(two_people["rita"])
    page = client.get("/settings/").content.decode()
    assert 'id="notify-states"' in page and 'id="notify-deliveries"' in page and "sam@example.com" in page
