"""Sign-in throttling on the site and the admin: a username, and an address,
each lock after VETTED_LOGIN_FAILURES failed sign-ins, with a clear page and
a log line; a locked attempt is refused before any password is checked; the
reviewer clears a lockout (Settings or the command line), audited."""

from __future__ import annotations

import logging
from datetime import timedelta
from io import StringIO

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from reviews.models import AuditEvent

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-password-1"  # the reviewer fixture's
LIMIT = settings.AXES_FAILURE_LIMIT
SITE, ADMIN = "/accounts/login/", "/admin/login/"


def sign_in(client, username="rita", password=PASSWORD, *, path=SITE, address="127.0.0.1"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def fail(client, times, username="rita", *, path=SITE, address="127.0.0.1"):
    return [sign_in(client, username, "not-the-password", path=path, address=address).status_code for _ in range(times)]


def assert_locked_page(response):
    assert response.status_code == 429
    html = response.content.decode()
    assert "Too many failed sign-ins for this account or address" in html
    assert f"locked for {settings.VETTED_LOGIN_LOCKOUT_MINUTES} minutes" in html
    assert "clear it on the Settings page" in html and "python manage.py clear_lockout" in html


def test_defaults_are_five_failures_and_fifteen_minutes():
    assert LIMIT == 5 and timedelta(minutes=15) == settings.AXES_COOLOFF_TIME


@pytest.mark.parametrize("path", [SITE, ADMIN])
def test_a_username_locks_after_the_limit_and_then_refuses_even_the_right_password(client, reviewer, path):
    assert fail(client, LIMIT - 1, path=path) == [200] * (LIMIT - 1)
    response = sign_in(client, password="still-wrong", path=path)
    assert_locked_page(response)
    assert_locked_page(sign_in(client, path=path))
    assert "_auth_user_id" not in client.session


def test_site_and_admin_failures_count_together(client, reviewer):
    fail(client, 3, path=SITE)
    fail(client, LIMIT - 4, path=ADMIN)
    assert_locked_page(sign_in(client, password="wrong-again", path=ADMIN))
    assert_locked_page(sign_in(client, path=SITE))


def test_a_username_locks_whatever_address_the_attempts_come_from(client, reviewer):
    for n in range(LIMIT):
        sign_in(client, password="wrong", address=f"203.0.113.{n + 1}")
    assert_locked_page(sign_in(client, address="198.51.100.7"))


def test_an_address_locks_after_failures_on_any_usernames(client, reviewer):
    for n in range(LIMIT):
        sign_in(client, f"guess{n}", "wrong", address="203.0.113.9")
    assert_locked_page(sign_in(client, address="203.0.113.9"))
    assert sign_in(Client(), address="198.51.100.7").status_code == 302  # the account itself is not locked


def test_a_locked_attempt_never_reaches_the_password_check(client, reviewer, monkeypatch):
    fail(client, LIMIT)
    checked = []
    original = ModelBackend.authenticate

    def counting(self, *args, **kwargs):
        checked.append(kwargs.get("username"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", counting)
    for _ in range(3):
        assert sign_in(client).status_code == 429
    assert checked == []  # no password hashing while locked (~0.5 s of CPU each with the real hasher)


def test_a_success_before_the_limit_forgets_the_failures(client, reviewer):
    fail(client, LIMIT - 1)
    assert sign_in(client).status_code == 302
    client.logout()
    assert fail(client, LIMIT - 1) == [200] * (LIMIT - 1)


def test_a_lockout_ends_after_the_lockout_period(client, reviewer):
    fail(client, LIMIT)
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.first().attempt_time - timedelta(minutes=16))
    assert sign_in(client).status_code == 302


def test_the_lockout_is_logged_with_username_and_address_never_the_password(client, reviewer, caplog):
    with caplog.at_level(logging.WARNING, logger="reviews.lockouts"):
        for _ in range(LIMIT):
            sign_in(client, password="Secret-Guess-42", address="203.0.113.5")
    lines = [r.getMessage() for r in caplog.records if r.name == "reviews.lockouts"]
    assert lines and "username 'rita'" in lines[0] and "address 203.0.113.5" in lines[0]
    assert "clear_lockout --username rita" in lines[0]
    assert "Secret-Guess-42" not in caplog.text


# --------------------------------------------------------------------------- clearing


def test_settings_lists_lockouts_and_clear_lifts_one_with_an_audit_event(client, reviewer, second_reviewer):
    fail(client, LIMIT)
    assert_locked_page(sign_in(client))
    staff = Client()
    staff.force_login(second_reviewer)
    page = staff.get(reverse("site_settings")).content.decode()
    assert "username <code>rita</code>" in page and "address <code>127.0.0.1</code>" in page
    response = staff.post(reverse("lockout_clear"), {"kind": "username", "value": "rita"})
    assert response.status_code == 302
    event = AuditEvent.objects.get(event_type="login.lockout_cleared")
    assert (event.actor, event.subject_id) == ("sam", "rita")
    assert event.extra["attempts_removed"] == 1
    assert sign_in(client).status_code == 302  # her failures were the address's too: both lifted
    assert "No username or address is locked out." in staff.get(reverse("site_settings")).content.decode()


def test_clearing_an_address_lifts_its_lockout_with_an_audit_event(client, reviewer, second_reviewer):
    for n in range(LIMIT):
        sign_in(client, f"guess{n}", "wrong", address="203.0.113.9")
    assert_locked_page(sign_in(client, address="203.0.113.9"))
    staff = Client()
    staff.force_login(second_reviewer)
    assert "address <code>203.0.113.9</code>" in staff.get(reverse("site_settings")).content.decode()
    staff.post(reverse("lockout_clear"), {"kind": "address", "value": "203.0.113.9"})
    event = AuditEvent.objects.get(event_type="login.lockout_cleared")
    assert event.subject_id == "address:203.0.113.9" and event.extra["attempts_removed"] == LIMIT + 1
    assert sign_in(client, address="203.0.113.9").status_code == 302


def test_clearing_needs_a_signed_in_reviewer(client, reviewer):
    fail(client, LIMIT)
    response = Client().post(reverse("lockout_clear"), {"kind": "username", "value": "rita"})
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert AccessAttempt.objects.exists() and not AuditEvent.objects.filter(event_type="login.lockout_cleared").exists()


def test_a_bad_address_is_refused_and_changes_nothing(client, reviewer, second_reviewer):
    fail(client, LIMIT)
    staff = Client()
    staff.force_login(second_reviewer)
    staff.post(reverse("lockout_clear"), {"kind": "address", "value": "not-an-ip"})
    assert AccessAttempt.objects.exists() and not AuditEvent.objects.filter(event_type="login.lockout_cleared").exists()


def test_the_command_line_lists_and_clears_lockouts_audited(client, reviewer):
    fail(client, LIMIT, address="203.0.113.5")
    listed = StringIO()
    call_command("clear_lockout", "--list", stdout=listed)
    assert "username rita: 5 failed attempts" in listed.getvalue() and "address 203.0.113.5" in listed.getvalue()
    out = StringIO()
    call_command("clear_lockout", "--address", "203.0.113.5", stdout=out)
    call_command("clear_lockout", "--username", "rita", stdout=out)
    assert "Cleared the sign-in lockout of rita" in out.getvalue()
    assert AuditEvent.objects.filter(event_type="login.lockout_cleared", actor="rita").count() == 2
    assert sign_in(client, address="203.0.113.5").status_code == 302
