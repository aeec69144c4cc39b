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

from retrieval.scratch import scratch_database
from reviews import actions
from reviews.models import Agent, Record
from reviews.space_models import Membership, Space

from .test_export_json import export, import_file
from .test_spaces import MARKERS, clients  # noqa: F401  (the fixture)


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
        a.public_id: (a.name, sorted(a.scopes), a.owner.get_username() if a.owner else None, a.is_active)
        for a in Agent.objects.select_related("owner")
    }


def records_state() -> dict:
    return {
        r.public_id: (r.scope, r.status, r.title, r.approved_checksum, r.current_checksum())
        for r in Record.objects.all()
    }


@pytest.mark.django_db(transaction=True)
def test_a_full_export_round_trips_spaces_members_rules_grants_and_records(clients, tmp_path):
    rita, sam = clients["rita"], clients["sam"]
    actions.set_required_approvals("northrail", 2, actor=rita)
    actions.add_member("acme", sam, role="reader", actor=rita)
    actions.grant_space(clients["bots"]["personal:sam"], "northrail", actor=sam)
    before = (spaces_state(), agents_state(), records_state())
    export(tmp_path / "all.json")
    document = json.loads((tmp_path / "all.json").read_text())
    assert {s["slug"] for s in document["spaces"]} == set(before[0])

    with scratch_database():
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
    with scratch_database():
        get_user_model().objects.create_superuser("rita", "rita@example.com", "another-password-9")
        assert not Space.objects.filter(slug="acme").exists()
        import_file(tmp_path / "all.json")
        assert Record.objects.filter(scope="acme").count() == len(clients["records"]["acme"])


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
