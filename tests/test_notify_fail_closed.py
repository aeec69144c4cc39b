"""Notifications fail closed: a person's address is told only what that
person may be told now (nothing once deactivated or no longer staff), and
an agent cycling dispute and withdraw reaches the open-dispute cap and gets
one urgent message, not one per cycle."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from notify import recipients, sender
from notify.models import Event
from reviews import actions
from reviews.errors import LimitReached
from tests.conftest import content
from tests.test_notify import later, receiver, webhook  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

ITEMS = [
    {"id": "prop_000000000001", "title": "Team title", "agent": "a", "action": "create", "space": "team"},
    {"id": "prop_000000000002", "title": "System title", "agent": "a", "action": "create", "space": "system"},
]


@pytest.fixture
def sam_listed(settings, second_reviewer):
    settings.VETTED_NOTIFY_EMAIL = ["sam@example.com", "ops@example.com"]
    settings.VETTED_NOTIFY_SPACES = ["team", "system"]
    return second_reviewer


def _told(address: str) -> list[str]:
    return [i["title"] for to, items in recipients.email_groups(ITEMS) if address in to for i in items]


def test_a_listed_person_is_told_their_spaces_and_the_operator_address_everything(sam_listed):
    assert _told("sam@example.com") == ["Team title", "System title"]
    assert _told("ops@example.com") == ["Team title", "System title"]


def test_a_deactivated_persons_address_is_told_nothing(sam_listed):
    sam_listed.is_active = False
    sam_listed.save()
    assert _told("sam@example.com") == []
    assert _told("ops@example.com") == ["Team title", "System title"]


def test_an_address_whose_person_lost_staff_status_is_told_nothing(sam_listed):
    sam_listed.is_staff = False
    sam_listed.is_superuser = False
    sam_listed.save()
    assert _told("sam@example.com") == []


def test_a_person_removed_from_a_space_is_no_longer_told_of_it(sam_listed):
    actions.remove_member("system", sam_listed, actor=actions.SystemActor("tests"))
    assert _told("sam@example.com") == ["Team title"]


def _records(make_record, n):
    return [
        make_record(title=f"Record number {i}", body=f"Body {i}: " + "the nightly job reports to ops. " * 3)
        for i in range(n)
    ]


def test_withdrawn_disputes_count_against_the_cap_for_a_while(settings, agent, make_record):
    settings.VETTED_OPEN_DISPUTES_PER_AGENT = 2
    settings.VETTED_WITHDRAWN_DISPUTES_COUNT_MINUTES = 60
    records = _records(make_record, 3)
    for record in records[:2]:
        dispute = actions.dispute_record(record, agent=agent, reason="This is wrong now")
        actions.withdraw_proposal(dispute, agent=agent)
    with pytest.raises(LimitReached) as refused:
        actions.dispute_record(records[2], agent=agent, reason="This is wrong now")
    assert "withdrew 2" in refused.value.message and "VETTED_WITHDRAWN_DISPUTES_COUNT_MINUTES" in refused.value.message


def test_withdrawn_disputes_stop_counting_after_the_setting(settings, agent, make_record):
    from reviews.models import Proposal

    settings.VETTED_OPEN_DISPUTES_PER_AGENT = 1
    first, second = _records(make_record, 2)
    dispute = actions.dispute_record(first, agent=agent, reason="This is wrong now")
    actions.withdraw_proposal(dispute, agent=agent)
    Proposal.objects.filter(pk=dispute.pk).update(decided_at=timezone.now() - timedelta(minutes=61))
    actions.dispute_record(second, agent=agent, reason="This is wrong now")


def test_urgent_dispute_messages_are_coalesced_per_agent(webhook, settings, agent, make_record):  # noqa: F811
    settings.VETTED_OPEN_DISPUTES_PER_AGENT = 100
    settings.VETTED_NOTIFY_URGENT_PER_AGENT_SECONDS = 600
    records = _records(make_record, 4)
    actions.propose_create(agent=agent, reason="Seen in the repository", **content(title="A regular proposal here"))
    assert len(sender.batch(later(2))) == 1  # the regular message: the spacing starts
    urgent = []
    for n, record in enumerate(records):
        dispute = actions.dispute_record(record, agent=agent, reason="This is wrong now")
        urgent += [m for m in sender.batch(later(4 + n * 2)) if m.event == Event.DISPUTE_CREATED]
        actions.withdraw_proposal(dispute, agent=agent)
    assert len(urgent) == 1
