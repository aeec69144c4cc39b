"""The space has one name, ``space``. The old name, ``scope``, is refused
wherever someone types it today (MCP tool arguments, REST fields and query
parameters, command options, the notification setting, a current export
file), with an error naming what is allowed; it is still read only where a
file or an event written before the rename says it: export files of
versions 1 and 2, Markdown notes and folder manifests, and the write log."""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from portability.markdown_io import import_markdown
from portability.markdown_io.importer import MANIFEST_NAME, manifest_space
from reviews import actions, admin_spaces, legacy_events
from reviews.checksum import checksum_of
from reviews.models import AuditEvent, Proposal, Record
from reviews.snapshot import SnapshotInvalid, upgrade, validate_snapshot
from tests.legacy_documents import as_old_version
from tests.mcp_client import text_of
from tests.test_export_json import minimal_document
from tests.test_mcp_surface import run_client

# --------------------------------------------------------------------------- refused where typed today


@pytest.mark.django_db(transaction=True)
def test_an_mcp_tool_refuses_the_old_argument_by_name_listing_the_allowed_ones(agent_tokens, record):
    async def steps(c):
        return (
            await c.call_tool("search", {"query": "billing", "scope": "team"}),
            await c.call_tool("quality_check", {"scope": "team"}),
            await c.call_tool("search", {"query": "billing", "space": "team"}),
        )

    search, quality, today = run_client(agent_tokens["claude-code"], steps)
    assert search.is_error and quality.is_error
    said = text_of(search)
    assert "scope" in said and "unknown argument" in said
    assert "allowed: query, mode, kind, space, tags" in said
    assert "allowed: space" in text_of(quality)
    assert not today.is_error


@pytest.mark.django_db
def test_rest_refuses_the_old_field_and_query_parameter(reviewer):
    _agent, token = actions.create_agent("rest-bot", spaces=["team"], actor=reviewer)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    searched = api.get("/api/v1/search", {"q": "billing", "scope": "team"})
    assert searched.status_code == 400
    assert "unknown query parameter; allowed:" in searched.json()["fields"]["scope"]
    assert "space" in searched.json()["fields"]["scope"]
    listed = api.get("/api/v1/records", {"scope": "team"})
    assert listed.status_code == 400 and "scope" in listed.json()["fields"]
    proposed = api.post(
        "/api/v1/proposals",
        {
            "title": "Payments deploy window",
            "body": "The payments service deploys on Tuesdays at 10:00 UTC after the standup.",
            "kind": "fact",
            "scope": "team",
            "reason": "Told in the Monday call.",
        },
        format="json",
    )
    assert proposed.status_code == 400
    assert "unknown field; allowed:" in proposed.json()["fields"]["scope"]
    assert not Proposal.objects.filter(title="Payments deploy window").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["export_json", "export_markdown", "import_markdown", "quality"])
def test_commands_refuse_the_old_option(command, tmp_path, reviewer):
    with pytest.raises(CommandError, match="unrecognized arguments: --scope"):
        call_command(command, *([str(tmp_path / "out")] if command != "quality" else []), "--scope", "team")


def test_the_old_notification_setting_stops_the_process_naming_the_new_one(monkeypatch):
    import memory_site.settings_notify as settings_notify

    monkeypatch.setenv("VETTED_NOTIFY_SCOPES", "team")
    with pytest.raises(
        ImproperlyConfigured, match="VETTED_NOTIFY_SCOPES is not a setting; rename it VETTED_NOTIFY_SPACES"
    ):
        importlib.reload(settings_notify)
    monkeypatch.delenv("VETTED_NOTIFY_SCOPES")
    importlib.reload(settings_notify)


def test_a_current_export_file_with_the_old_name_is_refused_naming_the_field():
    document = minimal_document()
    document["records"][0]["scope"] = document["records"][0].pop("space")
    document["scopes"] = document.pop("space_slugs")
    with pytest.raises(SnapshotInvalid) as caught:
        validate_snapshot(upgrade(document))
    assert "missing top-level field(s): space_slugs" in "; ".join(caught.value.problems)


@pytest.mark.django_db
def test_a_current_export_record_with_the_old_name_is_refused_naming_it():
    document = minimal_document()
    document["records"][0]["scope"] = document["records"][0].pop("space")
    with pytest.raises(SnapshotInvalid) as caught:
        validate_snapshot(upgrade(document))
    said = "; ".join(caught.value.problems)
    assert "scope" in said and "space" in said


# --------------------------------------------------------------------------- read where written before


def test_an_old_export_file_reads_with_todays_names():
    old = as_old_version(minimal_document(), 2)
    assert "scopes" in old and "scope" in old["records"][0] and "scopes" in old["agents"][0]
    assert "scope" in old["records"][0]["approved_content"]
    new = upgrade(old)
    assert new["space_slugs"] == old["scopes"] and "scopes" not in new
    assert new["records"][0]["space"] == old["records"][0]["scope"] and "scope" not in new["records"][0]
    assert new["records"][0]["approved_content"]["space"] == old["records"][0]["approved_content"]["scope"]
    assert new["agents"][0]["spaces"] == old["agents"][0]["scopes"]
    assert "scope" in old["records"][0]  # the caller's document is left as it was


@pytest.mark.django_db
def test_an_old_markdown_note_and_manifest_import_into_the_space_they_name(reviewer, tmp_path):
    actions.create_space("acme", kind="team", name="Acme Corp", actor=reviewer)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "rota.md").write_text(
        "---\ntitle: Acme on-call rota\nscope: acme\n---\n\n"
        "The Acme on-call rota changes every Monday at 09:00 in the ops channel.\n"
    )
    import_markdown(notes)
    assert Proposal.objects.get(title="Acme on-call rota").space == "acme"

    folder = tmp_path / "exported"
    folder.mkdir()
    (folder / MANIFEST_NAME).write_text(json.dumps({"scope": "acme"}))
    assert manifest_space(folder) == "acme"


@pytest.mark.django_db
def test_an_old_move_event_is_shown_only_to_who_reads_both_spaces(reviewer, django_user_model):
    actions.create_space("acme", kind="team", name="Acme Corp", actor=reviewer)
    sam = django_user_model.objects.create_user("sam", password="a-long-password-2", is_staff=True)
    actions.add_member("acme", sam, role="reviewer", actor=reviewer)
    both = django_user_model.objects.create_user("tess", password="a-long-password-3", is_staff=True)
    actions.add_member("acme", both, role="reviewer", actor=reviewer)
    actions.add_member("team", both, role="reviewer", actor=reviewer)
    # Written before the rename (append-only: its keys stay as they were).
    old = AuditEvent.objects.create(
        event_type="record.moved",
        actor_type="user",
        actor="rita",
        subject_type="space",
        subject_id="acme",
        extra={"from_scope": "team", "to_scope": "acme"},
    )
    assert legacy_events.value(old.extra, "from_space") == "team"

    def shown_to(user) -> bool:
        request = SimpleNamespace(user=user)
        return admin_spaces.events(request, AuditEvent.objects.filter(pk=old.pk)).exists()

    assert shown_to(both) and not shown_to(sam)


@pytest.mark.django_db
def test_a_records_kept_approved_content_says_space_and_its_checksum_holds(make_record):
    made = Record.objects.get(pk=make_record().pk)
    assert made.approved_content is not None
    assert made.approved_content["space"] == made.space and "scope" not in made.approved_content
    assert checksum_of(made.approved_content) == made.approved_checksum
