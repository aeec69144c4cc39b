"""First run: until an account exists every page leads to /setup/, where the
reviewer account can be created once, only from the machine itself, and only
with the one-time setup code from VETTED_HOME/setup-code."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from reviews import actions, setup_code
from reviews.models import AuditEvent, Record
from tests.conftest import GOOD_BODY, content

pytestmark = pytest.mark.django_db

SETUP = "/setup/"
GOOD = {
    "username": "rita",
    "email": "rita@example.com",
    "password": "correct-horse-battery-9",
    "password2": "correct-horse-battery-9",
}
REMOTE = "203.0.113.5"


@pytest.fixture(autouse=True)
def _fresh_first_run_cache(monkeypatch):
    # The middleware caches "a user exists" at module level; other tests (or an
    # earlier request in this one) must not decide what this test sees.
    monkeypatch.setattr("inbox.middleware._user_exists", False)


@pytest.fixture(autouse=True)
def _setup_code(monkeypatch):
    """A fresh code for each test, in the form the person fills in."""
    setup_code.discard()
    monkeypatch.setitem(GOOD, "code", setup_code.ensure())
    yield
    setup_code.discard()


def users():
    return get_user_model().objects


def pending_count(response) -> int:
    match = re.search(r'id="pending-count">\s*(\d+)\s*<', response.content.decode())
    assert match, "the overview shows the pending count"
    return int(match.group(1))


# --------------------------------------------------------------------------- no account yet


@pytest.mark.parametrize("path", ["/", "/admin/", "/accounts/login/"])
def test_without_users_every_page_redirects_to_setup(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == SETUP


def test_setup_page_from_loopback_shows_the_form(client):
    response = client.get(SETUP)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<form" in html and 'name="password2"' in html
    assert response.context["local"] is True


def test_setup_page_from_ipv6_loopback_shows_the_form(client):
    response = client.get(SETUP, REMOTE_ADDR="::1")
    assert response.status_code == 200
    assert response.context["local"] is True


def test_setup_post_creates_a_superuser_logs_in_and_goes_home(client):
    response = client.post(SETUP, GOOD)
    assert response.status_code == 302
    assert response["Location"] == reverse("home")
    user = users().get()
    assert user.username == "rita" and user.email == "rita@example.com"
    assert user.is_superuser and user.is_staff and user.is_active
    assert user.check_password(GOOD["password"])
    assert client.session["_auth_user_id"] == str(user.pk)
    home = client.get(reverse("home"))
    assert home.status_code == 200
    assert home.context["user"] == user


def test_setup_post_writes_a_system_audit_event(client):
    client.post(SETUP, GOOD)
    event = AuditEvent.objects.get(event_type="user.created")
    assert event.actor_type == "system"
    assert event.actor == "system:first-run"
    assert (event.subject_type, event.subject_id) == ("user", "rita")
    assert event.extra == {"superuser": True, "remote_addr": "127.0.0.1"}


def test_password_mismatch_is_reported_and_creates_nobody(client):
    response = client.post(SETUP, {**GOOD, "password2": "correct-horse-battery-8"})
    assert response.status_code == 200
    assert "the two passwords differ" in response.content.decode()
    assert response.context["username"] == "rita"  # the form keeps what was typed
    assert not users().exists()
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(
    "password, expected",
    [
        ("short-1", "too short"),
        ("password123", "too common"),
        ("4815162342108", "entirely numeric"),
    ],
)
def test_weak_password_is_reported_and_creates_nobody(client, password, expected):
    response = client.post(SETUP, {**GOOD, "password": password, "password2": password})
    assert response.status_code == 200
    assert "password" in response.context["errors"]
    assert expected in response.context["errors"]["password"]
    assert expected in response.content.decode()
    assert not users().exists()
    assert not AuditEvent.objects.exists()


def test_password_similar_to_username_is_refused(client):
    password = "ritarita-example"
    response = client.post(SETUP, {**GOOD, "username": "ritarita-example", "password": password, "password2": password})
    assert response.status_code == 200
    assert "too similar" in response.context["errors"]["password"]
    assert not users().exists()


@pytest.mark.parametrize("username", ["", "   ", "bad name", "semi;colon", "x" * 151])
def test_bad_username_is_reported_and_creates_nobody(client, username):
    response = client.post(SETUP, {**GOOD, "username": username})
    assert response.status_code == 200
    assert "username" in response.context["errors"]
    assert "1-150 characters: letters, digits and @ . + - _" in response.content.decode()
    assert not users().exists()
    assert not AuditEvent.objects.exists()


# --------------------------------------------------------------------------- the setup code


@pytest.mark.parametrize("code", ["", "0" * 24, "not-the-code"])
def test_setup_without_the_right_code_creates_nobody_and_says_where_the_code_is(client, code):
    response = client.post(SETUP, {**GOOD, "code": code})
    assert response.status_code == 200
    message = response.context["errors"]["code"]
    assert str(setup_code.path()) in message and "manage.py serve" in message
    assert ("required" if not code else "does not match") in message
    assert escape(message) in response.content.decode()
    assert not users().exists() and not AuditEvent.objects.exists()
    assert "_auth_user_id" not in client.session


def test_the_setup_page_makes_a_private_code_file_when_there_is_none(client):
    setup_code.discard()
    response = client.get(SETUP)
    assert response.status_code == 200
    assert setup_code.path().stat().st_mode & 0o777 == 0o600
    html = response.content.decode()
    assert str(setup_code.path()) in html and 'name="code"' in html
    assert setup_code.path().read_text().strip() not in html  # the page says where it is, not what it is


def test_a_code_file_others_could_read_is_replaced(client):
    old = GOOD["code"]
    setup_code.path().chmod(0o644)
    client.get(SETUP)
    assert setup_code.path().stat().st_mode & 0o777 == 0o600
    assert setup_code.path().read_text().strip() != old
    assert client.post(SETUP, GOOD).status_code == 200 and not users().exists()


def test_the_address_serve_prints_fills_in_the_code(client):
    response = client.get(SETUP, {"code": GOOD["code"]})
    assert f'value="{GOOD["code"]}"' in response.content.decode()


def test_the_code_is_deleted_once_the_account_exists(client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(SETUP, GOOD).status_code == 302
    assert not setup_code.path().exists()


def test_an_account_made_otherwise_retires_the_code(client, reviewer):
    assert client.get(SETUP).status_code == 302
    assert not setup_code.path().exists()


def test_serve_prints_the_address_with_the_code_only_on_a_terminal():
    code = GOOD["code"]
    on_terminal = setup_code.first_run_notice("127.0.0.1", 8765, code, console=True)
    assert f"http://127.0.0.1:8765/setup/?code={code}" in on_terminal
    in_a_log = setup_code.first_run_notice("0.0.0.0", 8765, code, console=False)
    assert code not in in_a_log
    assert "http://127.0.0.1:8765/setup/" in in_a_log and str(setup_code.path()) in in_a_log


# --------------------------------------------------------------------------- not from this machine


def test_setup_page_from_another_machine_is_forbidden(client):
    response = client.get(SETUP, REMOTE_ADDR=REMOTE)
    assert response.status_code == 403
    html = response.content.decode()
    assert "only be created from the machine" in html
    assert 'name="password"' not in html


@pytest.mark.parametrize("remote", [REMOTE, "10.0.0.8", "not-an-ip", ""])
def test_setup_post_from_another_machine_creates_nobody(client, remote):
    response = client.post(SETUP, GOOD, REMOTE_ADDR=remote)
    assert response.status_code == 403
    assert not users().exists()
    assert not AuditEvent.objects.exists()
    assert "_auth_user_id" not in client.session


# --------------------------------------------------------------------------- once an account exists


def test_setup_redirects_home_once_a_user_exists(client, reviewer):
    response = client.get(SETUP)
    assert response.status_code == 302
    assert response["Location"] == reverse("home")


def test_setup_post_cannot_create_a_second_account(client, reviewer):
    response = client.post(SETUP, {**GOOD, "username": "mallory"})
    assert response.status_code == 302
    assert list(users().values_list("username", flat=True)) == ["rita"]
    assert not AuditEvent.objects.filter(event_type="user.created").exists()
    assert "_auth_user_id" not in client.session


def test_create_first_reviewer_refuses_when_a_user_exists(reviewer):
    from reviews.errors import InvalidTransition

    with pytest.raises(InvalidTransition, match="already exists"):
        actions.create_first_reviewer(
            username="mallory", password=GOOD["password"], remote_addr="127.0.0.1", setup_code=GOOD["code"]
        )
    assert users().count() == 1


def test_after_setup_pages_no_longer_redirect_to_setup(client):
    client.post(SETUP, GOOD)
    client.logout()
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


# --------------------------------------------------------------------------- the overview


def test_home_requires_login_once_a_user_exists(client, reviewer):
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/"


def test_login_page_is_reachable_once_a_user_exists(client, reviewer):
    assert client.get(reverse("login")).status_code == 200


def test_home_shows_the_counts(client, reviewer, agent, make_record):
    kept, retiring, disputed = (
        make_record(title=f"Record number {i}", body=f"{GOOD_BODY} Copy {i}.") for i in range(3)
    )
    actions.propose_retirement(retiring, agent=agent, reason="The repository was archived")
    actions.dispute_record(disputed, agent=agent, reason="The repository moved")
    client.force_login(reviewer)
    response = client.get(reverse("home"))
    assert response.status_code == 200
    assert pending_count(response) == 2
    assert response.context["approved_count"] == 2
    assert response.context["disputed_count"] == 1
    assert response.context["agent_count"] == 1
    assert response.context["overdue_count"] == 0
    assert retiring.title in response.content.decode()


def test_home_pending_count_drops_when_a_proposal_is_decided(client, reviewer, agent, record):
    proposal = actions.propose_retirement(record, agent=agent, reason="The repository was archived")
    client.force_login(reviewer)
    assert pending_count(client.get(reverse("home"))) == 1
    actions.reject_proposal(proposal, actor=reviewer, note="Still there")
    response = client.get(reverse("home"))
    assert pending_count(response) == 0
    assert response.context["approved_count"] == 1


def test_home_counts_overdue_records(client, reviewer, record):
    Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=1))
    client.force_login(reviewer)
    assert client.get(reverse("home")).context["overdue_count"] == 1


def test_home_lists_pending_create_proposals(client, reviewer, agent):
    actions.propose_create(agent=agent, reason="Seen in the repo", **content(title="Pending create note"))
    client.force_login(reviewer)
    response = client.get(reverse("home"))
    assert response.status_code == 200
    assert pending_count(response) == 1
    assert "Pending create note" in response.content.decode()
