"""The admin shows everything and changes nothing by itself.

Records, proposals and agents change only through the admin actions, which
call reviews.actions (validated, audited with the signed-in reviewer as the
actor). The write log cannot be added to, edited or deleted from the admin.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages import get_messages
from django.urls import reverse

from reviews import actions
from reviews.errors import InvalidTransition, NotFound
from reviews.models import Agent, AuditEvent, Proposal, Record
from tests.conftest import content

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_first_run_cache(monkeypatch):
    # FirstRunMiddleware remembers "a user exists" at module level; start each
    # test from the real database state.
    monkeypatch.setattr("inbox.middleware._user_exists", False)


@pytest.fixture
def admin(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def sam_admin(client, reviewer, second_reviewer):
    """Signed in as the *second* reviewer, so the audit actor cannot be
    mistaken for the first account."""
    client.force_login(second_reviewer)
    return client


def changelist(model: str) -> str:
    app = "auth" if model == "user" else "reviews"
    return reverse(f"admin:{app}_{model}_changelist")


def change_url(model: str, pk: int) -> str:
    return reverse(f"admin:reviews_{model}_change", args=[pk])


def run_action(client, model: str, action: str, *objs):
    return client.post(
        changelist(model),
        {
            "action": action,
            ACTION_CHECKBOX_NAME: [str(obj.pk) for obj in objs],
            "index": 0,
        },
    )


def messages_of(response) -> list[tuple[str, str]]:
    return [(m.level_tag, m.message) for m in get_messages(response.wsgi_request)]


def action_names(response) -> set[str]:
    return set(re.findall(r'<option value="([a-z_]+)"', response.content.decode()))


# --------------------------------------------------------------------------- audit events


def test_audit_changelist_loads_with_its_filters(admin, record):
    response = admin.get(changelist("auditevent"))
    assert response.status_code == 200
    cl = response.context["cl"]
    assert cl.result_count == AuditEvent.objects.count() > 0
    filter_titles = {spec.title for spec in cl.filter_specs}
    assert {"event type", "actor type", "subject type", "actor", "at"} <= filter_titles


def test_audit_changelist_filtered_by_event_type_shows_only_that_type(admin, record):
    response = admin.get(changelist("auditevent"), {"event_type": "proposal.accepted"})
    assert response.status_code == 200
    found = list(response.context["cl"].result_list)
    assert found and {e.event_type for e in found} == {"proposal.accepted"}


def test_audit_add_view_is_forbidden(admin):
    before = AuditEvent.objects.count()
    assert admin.get(reverse("admin:reviews_auditevent_add")).status_code == 403
    response = admin.post(
        reverse("admin:reviews_auditevent_add"),
        {
            "event_type": "forged",
            "actor_type": "user",
            "actor": "mallory",
            "subject_type": "record",
            "subject_id": "rec_forged",
        },
    )
    assert response.status_code == 403
    assert AuditEvent.objects.count() == before
    assert not AuditEvent.objects.filter(event_type="forged").exists()


def test_audit_change_view_post_cannot_modify_an_event(admin, record):
    event = AuditEvent.objects.filter(event_type="proposal.accepted").get()
    response = admin.post(
        change_url("auditevent", event.pk),
        {
            "event_type": "forged",
            "actor_type": "user",
            "actor": "mallory",
            "subject_type": "record",
            "subject_id": event.subject_id,
            "snippet": "rewritten history",
        },
    )
    assert response.status_code == 403
    fresh = AuditEvent.objects.get(pk=event.pk)
    assert (fresh.event_type, fresh.actor, fresh.snippet) == (event.event_type, event.actor, event.snippet)


def test_audit_change_page_is_viewable_read_only(admin, record):
    event = AuditEvent.objects.filter(event_type="proposal.accepted").get()
    response = admin.get(change_url("auditevent", event.pk))
    assert response.status_code == 200
    assert b'name="_save"' not in response.content


def test_audit_delete_view_is_forbidden(admin, record):
    event = AuditEvent.objects.first()
    url = reverse("admin:reviews_auditevent_delete", args=[event.pk])
    assert admin.get(url).status_code == 403
    assert admin.post(url, {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_audit_changelist_offers_no_actions_and_delete_selected_does_nothing(admin, record):
    response = admin.get(changelist("auditevent"))
    assert response.context["action_form"] is None
    assert "delete_selected" not in action_names(response)
    before = AuditEvent.objects.count()
    response = run_action(admin, "auditevent", "delete_selected", *AuditEvent.objects.all())
    assert response.status_code in (200, 302)
    assert AuditEvent.objects.count() == before


def test_audit_search_finds_matching_events_only(admin, make_record):
    first = make_record()
    second = make_record(title="Deploy runbook location", body="The deploy runbook is in the ops wiki, page 12.")
    response = admin.get(changelist("auditevent"), {"q": second.public_id})
    assert response.status_code == 200
    found = list(response.context["cl"].result_list)
    assert found
    assert all(second.public_id in (e.record_ref, e.subject_id) for e in found)
    assert not any(first.public_id in (e.record_ref, e.subject_id) for e in found)


def test_audit_changelist_filtered_by_record_ref_shows_only_that_records_events(admin, reviewer, make_record):
    first = make_record()
    second = make_record(title="Deploy runbook location", body="The deploy runbook is in the ops wiki, page 12.")
    actions.verify_record(first, actor=reviewer)
    response = admin.get(changelist("auditevent"), {"record_ref": first.public_id})
    assert response.status_code == 200
    found = list(response.context["cl"].result_list)
    expected = set(AuditEvent.objects.filter(record_ref=first.public_id).values_list("pk", flat=True))
    assert {e.pk for e in found} == expected
    assert {e.event_type for e in found} >= {"proposal.accepted", "record.verified"}
    assert AuditEvent.objects.filter(record_ref=second.public_id).exists()
    assert all(e.record_ref == first.public_id for e in found)


def test_history_link_on_record_page_opens_that_records_audit_events(admin, record):
    page = admin.get(change_url("record", record.pk)).content.decode()
    match = re.search(r'href="([^"]*auditevent/\?record_ref=[^"]+)"', page)
    assert match, "the record page links to its audit events"
    response = admin.get(match.group(1).replace("&amp;", "&"))
    assert response.status_code == 200
    found = list(response.context["cl"].result_list)
    assert found and all(e.record_ref == record.public_id for e in found)


# --------------------------------------------------------------------------- records


def test_record_changelist_shows_the_checksum_state(admin, make_record):
    intact = make_record()
    edited = make_record(title="Deploy runbook location", body="The deploy runbook is in the ops wiki, page 12.")
    # Someone edits the text behind the actions' back (e.g. raw SQL).
    Record.objects.filter(pk=edited.pk).update(body="The deploy runbook is in the ops wiki, page 13.")
    response = admin.get(changelist("record"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "column-checksum_state" in html
    rows = {r.public_id: r for r in response.context["cl"].result_list}
    assert set(rows) == {intact.public_id, edited.public_id}
    model_admin = response.context["cl"].model_admin
    assert model_admin.checksum_state(rows[intact.public_id]) == "matches approval"
    assert model_admin.checksum_state(rows[edited.public_id]) == "edited since approval"
    assert "matches approval" in html and "edited since approval" in html


def test_record_add_view_is_forbidden(admin):
    assert admin.get(reverse("admin:reviews_record_add")).status_code == 403
    response = admin.post(reverse("admin:reviews_record_add"), {**content(), "tags": "[]"})
    assert response.status_code == 403
    assert not Record.objects.exists()


def test_record_delete_view_is_forbidden(admin, record):
    url = reverse("admin:reviews_record_delete", args=[record.pk])
    assert admin.get(url).status_code == 403
    assert admin.post(url, {"post": "yes"}).status_code == 403
    assert Record.objects.filter(pk=record.pk).exists()


def test_record_changelist_offers_the_review_actions_but_not_delete_selected(admin, record):
    names = action_names(admin.get(changelist("record")))
    assert {"verify_selected", "retire_selected", "clear_dispute_selected"} <= names
    assert "delete_selected" not in names
    run_action(admin, "record", "delete_selected", record)
    assert Record.objects.filter(pk=record.pk).exists()


def test_record_change_page_is_viewable(admin, record):
    response = admin.get(change_url("record", record.pk))
    assert response.status_code == 200
    html = response.content.decode()
    assert record.title in html
    assert "matches approval" in html
    assert b'name="_save"' not in response.content


def test_record_change_post_does_not_change_the_record(admin, record):
    before = Record.objects.get(pk=record.pk)
    response = admin.post(
        change_url("record", record.pk),
        {
            **content(),
            "title": "Tampered title",
            "body": "Tampered body text that nobody approved at all.",
            "tags": '["x"]',
            "status": "approved",
            "review_by": "2099-01-01",
            "approved_checksum": "0" * 64,
            "_save": "Save",
        },
    )
    assert response.status_code == 403
    after = Record.objects.get(pk=record.pk)
    assert (after.title, after.body, after.approved_checksum, after.review_by) == (
        before.title,
        before.body,
        before.approved_checksum,
        before.review_by,
    )
    assert not after.edited_since_approval


def test_verify_action_verifies_and_audits_with_the_signed_in_reviewer_as_actor(sam_admin, second_reviewer, record):
    Record.objects.filter(pk=record.pk).update(verified_at=None)
    response = run_action(sam_admin, "record", "verify_selected", record)
    assert response.status_code == 302
    assert ("success", "Verified 1 item(s).") in messages_of(response)
    record.refresh_from_db()
    assert record.verified_at is not None
    event = AuditEvent.objects.get(event_type="record.verified")
    assert (event.actor_type, event.actor, event.record_ref) == ("user", second_reviewer.username, record.public_id)


def test_retire_action_retires_and_audits_with_the_signed_in_reviewer_as_actor(sam_admin, second_reviewer, record):
    response = run_action(sam_admin, "record", "retire_selected", record)
    assert response.status_code == 302
    assert ("success", "Retired 1 item(s).") in messages_of(response)
    record.refresh_from_db()
    assert record.status == "retired"
    event = AuditEvent.objects.get(event_type="record.retired")
    assert (event.actor_type, event.actor, event.record_ref) == ("user", second_reviewer.username, record.public_id)
    assert second_reviewer.username in event.snippet


def test_clear_dispute_action_restores_the_record_and_audits(sam_admin, second_reviewer, agent, record):
    dispute = actions.dispute_record(record, agent=agent, reason="The repository was renamed")
    response = run_action(sam_admin, "record", "clear_dispute_selected", record)
    assert response.status_code == 302
    assert ("success", "Kept 1 item(s).") in messages_of(response)
    record.refresh_from_db()
    dispute.refresh_from_db()
    assert record.status == "approved"
    assert dispute.state == "rejected" and dispute.decided_by == second_reviewer
    event = AuditEvent.objects.get(event_type="record.dispute_cleared")
    assert (event.actor_type, event.actor, event.record_ref) == ("user", second_reviewer.username, record.public_id)
    assert event.extra["rejected_disputes"] == [dispute.public_id]


def test_retiring_an_already_retired_record_shows_an_error_and_audits_nothing(admin, reviewer, record):
    actions.retire_record(record, actor=reviewer, note="Gone")
    before = AuditEvent.objects.count()
    response = run_action(admin, "record", "retire_selected", record)
    assert response.status_code == 302
    found = messages_of(response)
    assert any(level == "error" and record.public_id in text and "retired" in text for level, text in found), found
    assert not any(level == "success" for level, _ in found)
    assert AuditEvent.objects.count() == before


def test_verify_action_refuses_a_record_edited_since_approval(admin, record):
    Record.objects.filter(pk=record.pk).update(body="Edited behind the reviewer's back, never approved.")
    before = AuditEvent.objects.count()
    response = run_action(admin, "record", "verify_selected", record)
    found = messages_of(response)
    assert any(level == "error" and "edited since approval" in text for level, text in found), found
    assert AuditEvent.objects.count() == before


def test_action_on_several_records_reports_successes_and_failures_separately(admin, reviewer, make_record):
    live = make_record()
    gone = make_record(title="Deploy runbook location", body="The deploy runbook is in the ops wiki, page 12.")
    actions.retire_record(gone, actor=reviewer, note="Gone")
    response = run_action(admin, "record", "retire_selected", live, gone)
    found = messages_of(response)
    assert ("success", "Retired 1 item(s).") in found
    assert sum(level == "error" for level, _ in found) == 1
    live.refresh_from_db()
    assert live.status == "retired"
    assert AuditEvent.objects.filter(event_type="record.retired", record_ref=live.public_id, actor="rita").count() == 1


# --------------------------------------------------------------------------- proposals


def test_accept_action_accepts_the_proposal_and_audits(sam_admin, second_reviewer, agent):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    response = run_action(sam_admin, "proposal", "accept_selected", proposal)
    assert ("success", "Accepted 1 item(s).") in messages_of(response)
    proposal.refresh_from_db()
    assert proposal.state == "accepted" and proposal.decided_by == second_reviewer
    assert proposal.result_record is not None and proposal.result_record.status == "approved"
    event = AuditEvent.objects.get(event_type="proposal.accepted")
    assert (event.actor, event.proposal_ref, event.record_ref) == (
        second_reviewer.username,
        proposal.public_id,
        proposal.result_record.public_id,
    )


def test_reject_action_rejects_the_proposal_and_audits(sam_admin, second_reviewer, agent):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    response = run_action(sam_admin, "proposal", "reject_selected", proposal)
    assert ("success", "Rejected 1 item(s).") in messages_of(response)
    proposal.refresh_from_db()
    assert proposal.state == "rejected" and proposal.decided_by == second_reviewer
    assert not Record.objects.exists()
    event = AuditEvent.objects.get(event_type="proposal.rejected")
    assert (event.actor, event.proposal_ref) == (second_reviewer.username, proposal.public_id)


def test_accepting_an_already_decided_proposal_shows_an_error_and_audits_nothing(admin, reviewer, agent):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    actions.reject_proposal(proposal, actor=reviewer, note="No")
    before = AuditEvent.objects.count()
    response = run_action(admin, "proposal", "accept_selected", proposal)
    found = messages_of(response)
    assert any(level == "error" and "already rejected" in text for level, text in found), found
    proposal.refresh_from_db()
    assert proposal.state == "rejected"
    assert AuditEvent.objects.count() == before
    assert not Record.objects.exists()


def test_proposal_add_and_delete_are_forbidden(admin, agent):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    assert admin.get(reverse("admin:reviews_proposal_add")).status_code == 403
    delete_url = reverse("admin:reviews_proposal_delete", args=[proposal.pk])
    assert admin.get(delete_url).status_code == 403
    assert admin.post(delete_url, {"post": "yes"}).status_code == 403
    assert Proposal.objects.filter(pk=proposal.pk).exists()


def test_proposal_change_post_does_not_change_the_proposal(admin, agent):
    proposal = actions.propose_create(agent=agent, reason="Seen in the README", **content())
    assert admin.get(change_url("proposal", proposal.pk)).status_code == 200
    response = admin.post(change_url("proposal", proposal.pk), {"state": "accepted", "title": "Tampered"})
    assert response.status_code == 403
    proposal.refresh_from_db()
    assert (proposal.state, proposal.title) == ("pending", content()["title"])


# --------------------------------------------------------------------------- agents


def test_revoke_action_revokes_the_agent_and_audits(sam_admin, second_reviewer, agent):
    response = run_action(sam_admin, "agent", "revoke_selected", agent)
    assert ("success", "Revoked 1 item(s).") in messages_of(response)
    agent.refresh_from_db()
    assert agent.is_active is False and agent.revoked_at is not None
    event = AuditEvent.objects.get(event_type="agent.revoked")
    assert (event.actor, event.subject_id) == (second_reviewer.username, agent.public_id)


def test_revoking_a_revoked_agent_shows_an_error_and_audits_nothing(admin, reviewer, agent):
    actions.revoke_agent(agent, actor=reviewer)
    before = AuditEvent.objects.count()
    found = messages_of(run_action(admin, "agent", "revoke_selected", agent))
    assert any(level == "error" and "already revoked" in text for level, text in found), found
    assert AuditEvent.objects.count() == before


def test_agent_change_page_does_not_show_the_token_digest(admin, agent):
    digest = Agent.objects.get(pk=agent.pk).token_digest
    assert digest
    response = admin.get(change_url("agent", agent.pk))
    assert response.status_code == 200
    html = response.content.decode()
    assert agent.name in html
    assert digest not in html
    assert "token_digest" not in html and "Token digest" not in html


def test_agent_add_and_delete_are_forbidden(admin, agent):
    assert admin.get(reverse("admin:reviews_agent_add")).status_code == 403
    assert admin.post(reverse("admin:reviews_agent_delete", args=[agent.pk]), {"post": "yes"}).status_code == 403
    assert Agent.objects.filter(pk=agent.pk).exists()


# --------------------------------------------------------------------------- user accounts


@pytest.fixture
def una(django_user_model):
    return django_user_model.objects.create_user("una", "una@example.com", "a-long-password-3")


def user_url(name: str, *args) -> str:
    return reverse(f"admin:auth_user_{name}", args=args)


def test_no_form_in_the_admin_changes_an_account(admin, una):
    """Django's stock user admin would save these; here each is refused or absent."""
    before = AuditEvent.objects.count()
    assert admin.get(user_url("change", una.pk)).status_code == 200  # viewable
    response = admin.post(
        user_url("change", una.pk),
        {
            "username": "una",
            "is_staff": "on",
            "is_active": "on",
            "is_superuser": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 403
    assert admin.get(user_url("add")).status_code == 403
    assert (
        admin.post(
            user_url("add"), {"username": "mallory", "password1": "a-long-password-9", "password2": "a-long-password-9"}
        ).status_code
        == 403
    )
    assert admin.post(user_url("delete", una.pk), {"post": "yes"}).status_code == 403
    # The password form of the stock admin is gone altogether.
    assert admin.post(
        f"/admin/auth/user/{una.pk}/password/", {"password1": "another-password-7", "password2": "another-password-7"}
    ).status_code in (302, 404)
    una.refresh_from_db()
    assert (una.is_staff, una.is_superuser, una.is_active) == (False, False, True)
    assert una.check_password("a-long-password-3")
    assert not type(una).objects.filter(username="mallory").exists()
    assert AuditEvent.objects.count() == before
    assert admin.get("/admin/auth/group/").status_code == 404


def test_user_change_page_does_not_show_the_password_hash(admin, una):
    html = admin.get(user_url("change", una.pk)).content.decode()
    assert "una@example.com" in html and una.password not in html and "pbkdf2" not in html


def test_making_an_account_staff_is_an_audited_admin_action(sam_admin, second_reviewer, una):
    response = run_action(sam_admin, "user", "make_staff", una)
    assert ("success", "Made reviewer 1 item(s).") in messages_of(response)
    una.refresh_from_db()
    assert una.is_staff is True
    event = AuditEvent.objects.get(event_type="account.staff_granted")
    assert (event.actor, event.subject_type, event.subject_id) == ("sam", "user", "una")
    assert event.extra == {"is_staff": True}
    assert "a-long-password" not in str(event.__dict__) and una.password not in str(event.__dict__)

    run_action(sam_admin, "user", "remove_staff", una)
    una.refresh_from_db()
    assert una.is_staff is False and AuditEvent.objects.filter(event_type="account.staff_removed").count() == 1


def test_deactivating_and_activating_an_account_are_audited(sam_admin, una):
    run_action(sam_admin, "user", "deactivate", una)
    una.refresh_from_db()
    assert una.is_active is False
    run_action(sam_admin, "user", "activate", una)
    una.refresh_from_db()
    assert una.is_active is True
    assert list(AuditEvent.objects.filter(subject_id="una").order_by("pk").values_list("event_type", "actor")) == [
        ("account.deactivated", "sam"),
        ("account.activated", "sam"),
    ]


def test_an_account_action_on_oneself_or_a_no_op_is_refused_and_audits_nothing(admin, reviewer, una):
    before = AuditEvent.objects.count()
    found = messages_of(run_action(admin, "user", "remove_staff", reviewer))
    assert any(level == "error" and "your own account" in text for level, text in found), found
    found = messages_of(run_action(admin, "user", "deactivate", reviewer))
    assert any(level == "error" and "your own account" in text for level, text in found), found
    found = messages_of(run_action(admin, "user", "activate", una))
    assert any(level == "error" and "already active" in text for level, text in found), found
    reviewer.refresh_from_db()
    assert reviewer.is_staff and reviewer.is_active
    assert AuditEvent.objects.count() == before


def test_only_a_superuser_may_change_accounts(reviewer, una, django_user_model):
    staff = django_user_model.objects.create_user("stan", "stan@example.com", "a-long-password-4", is_staff=True)
    with pytest.raises(InvalidTransition, match="not a superuser"):
        actions.set_account_staff(una, actor=staff, is_staff=True)
    with pytest.raises(InvalidTransition, match="not a reviewer"):
        actions.deactivate_account(staff, actor=una)
    with pytest.raises(NotFound, match="No user named 'nobody'"):
        actions.activate_account("nobody", actor=reviewer)
    una.refresh_from_db()
    staff.refresh_from_db()
    assert not una.is_staff and staff.is_active
    assert not AuditEvent.objects.filter(event_type__startswith="account.").exists()
