"""Sign-in throttling on the site and the admin: a (username, address) pair
locks after VETTED_LOGIN_FAILURES failed sign-ins, with a clear page and a
log line; nobody can lock a person out from another address, nor lock an
address everyone shares; a username attacked from many addresses is slowed
down, never locked, for the addresses that failed; a locked or slowed attempt
is refused before any password is checked and is not stored; the reviewer
clears a lockout (Settings or the command line), audited."""

from __future__ import annotations

import logging
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.management import call_command
from django.db.models import F
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
    assert "Too many failed sign-ins for this account from this address" in html
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


def test_failures_from_other_addresses_never_lock_the_person_out_of_theirs(client, reviewer):
    """A stranger who knows the username (agents read it in approved_by) and
    fails from elsewhere locks only their own pair."""
    fail(client, LIMIT * 3, address="203.0.113.66")
    assert_locked_page(sign_in(client, address="203.0.113.66"))
    assert sign_in(Client(), address="127.0.0.1").status_code == 302


def test_failures_on_many_usernames_never_lock_a_shared_address(client, reviewer):
    for n in range(LIMIT * 3):
        sign_in(client, f"guess{n}", "wrong", address="127.0.0.1")
    assert sign_in(Client(), address="127.0.0.1").status_code == 302  # every local browser shares 127.0.0.1


def counted_checks(monkeypatch):
    checked = []
    original = ModelBackend.authenticate

    def counting(self, *args, **kwargs):
        checked.append(kwargs.get("username"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", counting)
    return checked


def test_a_username_attacked_from_many_addresses_is_slowed_not_locked(client, reviewer, settings, monkeypatch):
    settings.VETTED_LOGIN_SLOWDOWN_AFTER = 6
    for n in range(6):
        assert sign_in(Client(), password="wrong", address=f"203.0.113.{n + 1}").status_code == 200
    checked = counted_checks(monkeypatch)
    # An address that has failed on it waits, refused before the password check...
    slowed = sign_in(Client(), address="203.0.113.1")
    assert slowed.status_code == 429 and checked == []
    html = slowed.content.decode()
    assert "Sign-in slowed down" in html and f"once every {settings.VETTED_LOGIN_SLOWDOWN_SECONDS} seconds" in html
    # ...but the right password from an address that has not failed works at once.
    assert sign_in(Client(), address="198.51.100.7").status_code == 302 and checked == ["rita"]


def test_a_slowed_address_gets_one_check_per_interval(client, reviewer, settings):
    settings.VETTED_LOGIN_SLOWDOWN_AFTER = 4
    for n in range(4):
        sign_in(Client(), password="wrong", address=f"203.0.113.{n + 1}")
    assert sign_in(Client(), password="wrong", address="203.0.113.1").status_code == 429
    interval = timedelta(seconds=settings.VETTED_LOGIN_SLOWDOWN_SECONDS)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - interval)
    assert sign_in(Client(), password="wrong", address="203.0.113.1").status_code == 200  # checked, and wrong
    assert sign_in(Client(), password="wrong", address="203.0.113.1").status_code == 429  # the next one waits again


def test_a_refused_attempt_is_not_stored_and_does_not_extend_the_lock(client, reviewer):
    fail(client, LIMIT)
    before = list(AccessAttempt.objects.values_list("failures_since_start", "attempt_time", "post_data"))
    for _ in range(10):
        assert sign_in(client, password="x" * 100, path=SITE).status_code == 429
    assert list(AccessAttempt.objects.values_list("failures_since_start", "attempt_time", "post_data")) == before


def test_the_guesses_per_hour_in_the_docs_follow_from_the_settings():
    from reviews import lockouts

    # One address: 5 per 15 minutes. Many: slowed after 20, then one per 30 s, plus one per new address.
    assert lockouts.guesses_per_hour(1) == 20
    assert lockouts.guesses_per_hour(1000) == 4 * 20 + 120 + 1000
    page = (Path(__file__).resolve().parent.parent / "docs" / "security-doors.md").read_text()
    assert f"{lockouts.guesses_per_hour(1)} guesses per hour" in page
    assert f"{lockouts.guesses_per_hour(1000)} guesses per hour" in page


def test_a_locked_attempt_never_reaches_the_password_check(client, reviewer, monkeypatch):
    fail(client, LIMIT)
    checked = counted_checks(monkeypatch)
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
    fail(client, LIMIT, address="203.0.113.9")
    assert_locked_page(sign_in(client, address="203.0.113.9"))
    staff = Client()
    staff.force_login(second_reviewer)
    assert "address <code>203.0.113.9</code>" in staff.get(reverse("site_settings")).content.decode()
    staff.post(reverse("lockout_clear"), {"kind": "address", "value": "203.0.113.9"})
    event = AuditEvent.objects.get(event_type="login.lockout_cleared")
    assert event.subject_id == "address:203.0.113.9" and event.extra["attempts_removed"] == 1
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
    assert "username rita from address 203.0.113.5: 5 failed attempts, locked until" in listed.getvalue()
    out = StringIO()
    call_command("clear_lockout", "--address", "203.0.113.5", stdout=out)
    call_command("clear_lockout", "--username", "rita", stdout=out)
    assert "Cleared the sign-in lockout of rita" in out.getvalue()
    assert AuditEvent.objects.filter(event_type="login.lockout_cleared", actor="rita").count() == 2
    assert sign_in(client, address="203.0.113.5").status_code == 302
