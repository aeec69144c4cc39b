"""Snapshots carry spaces (issue 16): a full ``export_json`` holds every
space with its approval rule and members, and agents with their owners and
grants; ``import_json`` into a fresh database makes them again, so records,
grants and checksums come back identical; a one-space export carries only
that space and its members (no other person's name)."""

# ruff: noqa: F811  (test_spaces.py's ``clients`` fixture, imported, is an argument)
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from reviews import actions
from reviews.models import Agent, Record
from reviews.space_models import Membership, Space

from .scratch_copies import fresh_database
from .test_export_json import export, import_file
from .test_spaces import MARKERS, build_clients, clients  # noqa: F401  (the fixture)


@pytest.fixture
def clients_world(db):
    """test_spaces.py's ``build_clients()``, made for each test: the imports here
    switch the connection to a fresh database (scratch_copies), which an
    outer transaction shared across tests cannot span."""
    return build_clients()


def spaces_state() -> dict:
    return {
        s.slug: (
            s.kind,
            s.name,
            s.required_approvals,
            sorted(Membership.objects.filter(space=s).values_list("user__username", "role")),
        )
        for s in Space.objects.all()
    }


def agents_state() -> dict:
    return {
        a.public_id: (a.name, sorted(a.spaces), a.owner.get_username() if a.owner else None, a.is_active)
        for a in Agent.objects.select_related("owner")
    }


def records_state() -> dict:
    return {
        r.public_id: (r.space, r.status, r.title, r.approved_checksum, r.current_checksum())
        for r in Record.objects.all()
    }


@pytest.mark.django_db(transaction=True)
def test_a_full_export_round_trips_spaces_members_rules_grants_and_records(clients, tmp_path):
    rita, sam = clients["rita"], clients["sam"]
    actions.add_member("acme", sam, role="reader", actor=rita)
    actions.grant_space(clients["bots"]["personal:sam"], "northrail", actor=sam)
    # The rule as stored (north-bot is sam's, so the action would want a third reviewer
    # first): what is exported and imported is the question here, not who could approve.
    Space.objects.filter(slug="northrail").update(required_approvals=2)
    before = (spaces_state(), agents_state(), records_state())
    export(tmp_path / "all.json")
    document = json.loads((tmp_path / "all.json").read_text())
    assert {s["slug"] for s in document["spaces"]} == set(before[0])

    with fresh_database():
        get_user_model().objects.create_superuser("rita", "rita@example.com", "another-password-9")
        result, _stderr = import_file(tmp_path / "all.json")
        after = (spaces_state(), agents_state(), records_state())
        sam_here = get_user_model().objects.get(username="sam")
        # The restored rules hold: northrail still needs two reviewers.
        required = Space.objects.get(slug="northrail").required_approvals

    assert sorted(result["spaces_created"]) == ["acme", "northrail", "personal:sam"]
    assert after == before
    assert required == 2
    assert not sam_here.is_active  # made inactive, like every username in a file


@pytest.mark.django_db(transaction=True)
def test_an_import_without_the_spaces_made_first_is_no_longer_refused(clients, tmp_path):
    export(tmp_path / "all.json")
    with fresh_database():
        get_user_model().objects.create_superuser("rita", "rita@example.com", "another-password-9")
        assert not Space.objects.filter(slug="acme").exists()
        import_file(tmp_path / "all.json")
        assert Record.objects.filter(space="acme").count() == len(clients["records"]["acme"])


@pytest.mark.django_db
def test_a_one_space_export_carries_only_that_space_and_its_members(clients, tmp_path):
    export(tmp_path / "acme.json", "--space", "acme")
    text = (tmp_path / "acme.json").read_text()
    document = json.loads(text)
    assert [s["slug"] for s in document["spaces"]] == ["acme"]
    assert document["spaces"][0]["members"] == [{"user": "rita", "role": "owner"}]
    assert '"sam"' not in text and "northrail" not in text.lower()
    for slug in ("northrail", "personal:sam"):
        for word in MARKERS[slug]:
            assert word not in text.lower()


@pytest.mark.django_db
def test_a_bad_space_row_is_refused_naming_it(clients, tmp_path):
    from reviews.snapshot import SnapshotInvalid, validate_snapshot

    export(tmp_path / "all.json")
    document = json.loads((tmp_path / "all.json").read_text())
    document["spaces"].append(
        {"slug": "globex", "kind": "club", "name": "", "required_approvals": 5, "created_at": "x", "members": [1]}
    )
    with pytest.raises(SnapshotInvalid) as refused:
        validate_snapshot(document)
    text = str(refused.value)
    for part in ("space 'globex': kind", "name must be", "required_approvals must be", "members must be", "created_at"):
        assert part in text


# ----------------------------------------------- importing into spaces and agents that exist (issue 13 follow-up)


def instance_with_acme(*, sam_role: str | None = None):
    """A new instance (inside fresh_database) where rita made acme, with joe
    as a reader, before importing; sam's personal space and agent north-bot
    (granted only that space) exist too."""
    User = get_user_model()
    rita = User.objects.create_superuser("rita", "rita@example.com", "another-password-9")
    sam = User.objects.create_user("sam", password="a-long-password-2", is_staff=True)
    joe = User.objects.create_user("joe", password="a-long-password-3")
    actions.create_space("acme", kind="team", name="Acme here", actor=rita)
    actions.add_member("acme", joe, role="reader", actor=rita)
    if sam_role:
        actions.add_member("acme", sam, role=sam_role, actor=rita)
    actions.create_space("", kind="personal", name="Sam's memory", actor=sam)
    actions.create_agent("north-bot", spaces=["personal:sam"], actor=sam)
    return rita


@pytest.mark.django_db(transaction=True)
def test_an_import_adds_missing_members_and_grants_to_what_exists_and_audits_each(clients, tmp_path):
    from reviews.models import AuditEvent

    actions.add_member("acme", clients["sam"], role="reader", actor=clients["rita"])
    export(tmp_path / "all.json")
    with fresh_database():
        instance_with_acme()
        result, stderr = import_file(tmp_path / "all.json")
        acme = spaces_state()["acme"]
        grants = Agent.objects.get(name="north-bot").spaces
        events = list(
            AuditEvent.objects.filter(extra__import=True)
            .order_by("id")
            .values_list("event_type", "actor", "subject_id", "extra")
        )
        imported = AuditEvent.objects.get(event_type="snapshot.imported").extra

    # joe (only here) stays; sam (only in the file) joins; the name here is kept.
    assert acme == ("team", "Acme here", 1, [("joe", "reader"), ("rita", "owner"), ("sam", "reader")])
    assert grants == ["northrail", "personal:sam"]  # northrail came with the file, and sam is its reviewer
    assert result["members_added"] == [{"space": "acme", "user": "sam", "role": "reader"}]
    assert result["grants_added"] == [{"agent": "north-bot", "space": "northrail"}]
    assert "sam (reader) to acme" in stderr and "northrail to north-bot" in stderr
    assert [(e, actor, extra) for e, actor, _s, extra in events] == [
        ("space.member_added", "rita", {"member": "sam", "role": "reader", "import": True}),
        ("agent.granted", "rita", {"space": "northrail", "grants": ["northrail", "personal:sam"], "import": True}),
    ]
    assert events[0][2] == "acme"
    assert imported["members_added"] == result["members_added"] and imported["grants_added"] == result["grants_added"]


@pytest.mark.django_db(transaction=True)
def test_an_import_that_would_change_a_role_or_a_rule_is_refused_naming_each_and_writes_nothing(clients, tmp_path):
    from django.core.management.base import CommandError

    actions.add_member("acme", clients["sam"], role="reader", actor=clients["rita"])
    Space.objects.filter(slug="acme").update(required_approvals=2)  # as stored; see above
    export(tmp_path / "all.json")
    with fresh_database():
        instance_with_acme(sam_role="reviewer")
        before = (spaces_state(), agents_state())
        with pytest.raises(CommandError) as refused:
            import_file(tmp_path / "all.json")
        after = (spaces_state(), agents_state(), Record.objects.count())

    text = str(refused.value)
    assert "space 'acme': sam is its reviewer here and its reader in the file" in text
    assert "space 'acme': it needs 1 approval(s) here and 2 in the file" in text
    assert "Nothing was written" in text
    assert after == (*before, 0)


@pytest.mark.django_db(transaction=True)
def test_an_import_adds_members_only_to_a_space_the_importer_owns(clients, tmp_path):
    from django.core.management.base import CommandError

    actions.add_member("acme", clients["sam"], role="reader", actor=clients["rita"])
    export(tmp_path / "all.json")
    with fresh_database():
        instance_with_acme()
        # ann reviews, but acme here is rita's: ann may not add people to it.
        get_user_model().objects.create_user("ann", password="a-long-password-4", is_staff=True)
        with pytest.raises(CommandError) as refused:
            import_file(tmp_path / "all.json", "--reviewer", "ann")
        members = spaces_state()["acme"][3]

    problems = str(refused.value)
    assert "space 'acme': the file adds sam, and only an owner of acme adds members; ann is not one" in problems
    assert "problem(s)" in problems and "(1 problem(s))" in problems
    assert ("sam", "reader") not in members


@pytest.mark.django_db(transaction=True)
def test_an_import_never_grants_a_space_to_another_persons_agent_of_the_same_name(clients, tmp_path):
    from django.core.management.base import CommandError

    export(tmp_path / "all.json")
    with fresh_database():
        instance_with_acme()
        # Here "acme-bot" is sam's (granted his own space); in the file it is rita's, granted acme.
        sam = get_user_model().objects.get(username="sam")
        actions.create_agent("acme-bot", spaces=["personal:sam"], actor=sam)
        with pytest.raises(CommandError) as refused:
            import_file(tmp_path / "all.json")
        grants = Agent.objects.get(name="acme-bot").spaces

    assert "agent 'acme-bot': the file grants it acme; it is sam's here and rita's in the file" in str(refused.value)
    assert grants == ["personal:sam"]


@pytest.mark.django_db(transaction=True)
def test_an_import_never_gives_a_personal_space_here_a_second_person(clients, tmp_path):
    from django.core.management.base import CommandError

    export(tmp_path / "all.json")
    with fresh_database():
        # The first account here is not rita: it claimed the fresh personal space.
        get_user_model().objects.create_superuser("admin", "admin@example.com", "another-password-9")
        with pytest.raises(CommandError) as refused:
            import_file(tmp_path / "all.json")
        personal = spaces_state()["personal"][3]

    assert "space 'personal': a personal space has one member, its owner: admin here, rita in the file" in str(
        refused.value
    )
    assert personal == [("admin", "owner")]
