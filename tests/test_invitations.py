"""Invitations: an owner makes a one-time link; the invited person opens it
signed out and makes their account, joining the space with the role chosen.
The link page answers without credentials: nothing without a valid token,
unknown, used and expired links alike, failed tries locked out like sign-ins."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from reviews import actions
from reviews.invitation_models import Invitation
from reviews.models import AuditEvent
from reviews.space_models import Membership

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-new-long-password-9"


@pytest.fixture
def acme(django_user_model, reviewer):
    sam = django_user_model.objects.create_user("sam", password="a-long-password-2", is_staff=True)
    nora = django_user_model.objects.create_user("nora", password="a-long-password-3", is_staff=True)
    actions.create_space("acme", kind="team", name="Acme Corp", actor=reviewer)
    actions.add_member("acme", sam, role="reviewer", actor=reviewer)
    return {"rita": reviewer, "sam": sam, "nora": nora}


def _as(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def _invite(owner, role="reviewer") -> str:
    """The link an owner makes on the space's page (the token from it)."""
    page = _as(owner).post(reverse("space_invite", args=["acme"]), {"role": role})
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    link = re.search(r'aria-label="Invitation link">([^<]+)</textarea>', page.text).group(1)
    return link.split("token=", 1)[1]


def _join(token, username="olga", password=NEW_PASSWORD, password2=None, client=None):
    return (client or Client()).post(
        reverse("invitation"),
        {"token": token, "username": username, "password": password, "password2": password2 or password},
    )


def test_an_owner_makes_a_link_that_is_stored_only_as_a_digest_and_audited(acme):
    token = _invite(acme["rita"])
    invitation = Invitation.objects.get()
    assert invitation.token_digest == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(Invitation.objects.values_list().get())
    event = AuditEvent.objects.get(event_type="space.invited")
    assert event.subject_id == "acme" and event.extra["role"] == "reviewer"
    assert token not in str(event.extra) and token not in event.snippet
    assert invitation.expires_at - timezone.now() > timedelta(hours=71)


def test_the_invited_person_joins_with_the_role_and_can_sign_in(acme):
    token = _invite(acme["rita"], role="reader")
    page = Client().get(reverse("invitation"), {"token": token})
    assert page.status_code == 200 and page["Referrer-Policy"] == "strict-origin"
    assert "rita invites you to <code>acme</code> as a <strong>reader</strong>" in page.text
    joined = _join(token)
    assert joined.status_code == 302 and joined["Location"] == reverse("login")
    olga = get_user_model().objects.get(username="olga")
    assert olga.is_staff and not olga.is_superuser
    assert Membership.objects.get(space__slug="acme", user=olga).role == "reader"
    event = AuditEvent.objects.get(event_type="space.member_added", snippet="olga")
    assert event.extra["invited_by"] == "rita" and event.extra["account_created"] is True
    browser = Client()
    signed_in = browser.post(reverse("login"), {"username": "olga", "password": NEW_PASSWORD})
    assert signed_in.status_code == 302
    assert 'id="space-acme"' in browser.get(reverse("spaces")).text


def _open(token=None, n=0):
    """Open the link page from address 10.0.0.n (each its own failure count)."""
    params = {"token": token} if token is not None else {}
    return Client().get(reverse("invitation"), params, REMOTE_ADDR=f"10.0.0.{n}")


def test_a_link_works_once_and_a_used_or_expired_link_reads_as_an_unknown_one(acme):
    token = _invite(acme["rita"])
    assert _join(token).status_code == 302
    used = _open(token, 1)
    again = Client().post(
        reverse("invitation"),
        {"token": token, "username": "olga2", "password": NEW_PASSWORD, "password2": NEW_PASSWORD},
        REMOTE_ADDR="10.0.0.2",
    )
    expired_token = _invite(acme["rita"])
    Invitation.objects.filter(used_at=None).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = _open(expired_token, 3)
    unknown = _open("x" * 43, 4)
    missing = _open(None, 5)
    assert used.status_code == again.status_code == expired.status_code == unknown.status_code == 404
    assert missing.status_code == 404
    pages = {re.sub(r'"X-CSRFToken": "[^"]+"', "", r.text) for r in (used, again, expired, unknown, missing)}
    assert len(pages) == 1  # one answer, whatever the reason
    assert "acme" not in unknown.text.lower() and "rita" not in unknown.text
    assert not get_user_model().objects.filter(username="olga2").exists()


def test_bad_account_details_are_refused_and_the_link_stays_open(acme):
    token = _invite(acme["rita"])
    taken = _join(token, username="SAM")
    assert taken.status_code == 400 and "is taken; choose another" in taken.text
    differ = _join(token, password2="something-else-entirely")
    assert differ.status_code == 400 and "the two passwords differ" in differ.text
    weak = _join(token, password="short")
    assert weak.status_code == 400 and "too short" in weak.text
    assert Invitation.objects.get().used_at is None
    assert _join(token).status_code == 302


def test_only_an_owner_makes_invitations(acme):
    reviewer = _as(acme["sam"]).post(reverse("space_invite", args=["acme"]), {"role": "owner"}, follow=True)
    assert "Only an owner of 'acme'" in " ".join(str(m) for m in reviewer.context["messages"])
    outsider = _as(acme["nora"]).post(reverse("space_invite", args=["acme"]), {"role": "owner"})
    assert outsider.status_code == 404
    assert not Invitation.objects.exists()
    signed_out = Client().post(reverse("space_invite", args=["acme"]), {"role": "owner"})
    assert signed_out.status_code == 302 and "login" in signed_out["Location"]


def test_guessing_links_locks_the_address_out_like_failed_sign_ins(acme):
    token = _invite(acme["rita"])
    guesser = Client()
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert guesser.get(reverse("invitation"), {"token": f"guess-{n}"}).status_code == 404
    assert guesser.get(reverse("invitation"), {"token": "guess-last"}).status_code == 429
    # Locked: even the right link answers nothing from that address now.
    locked = guesser.get(reverse("invitation"), {"token": token})
    assert locked.status_code == 429 and "Acme" not in locked.text
    assert _join(token, client=guesser).status_code == 429
    assert Invitation.objects.get().used_at is None


def test_the_operator_cannot_make_an_invitation_nobody_answers_for(acme):
    from reviews.errors import InvalidTransition

    with pytest.raises(InvalidTransition, match="made by an owner of the space"):
        actions.create_invitation("acme", role="reader", actor=actions.SystemActor("ops"))
    assert not Invitation.objects.exists()


def test_an_owner_lists_the_open_links_and_a_revoked_one_reads_as_unknown(acme):
    actions.add_member("acme", acme["nora"], role="owner", actor=acme["rita"])
    kept = _invite(acme["rita"], role="reader")
    revoked = _invite(acme["nora"], role="owner")
    used = _invite(acme["rita"])
    assert _join(used).status_code == 302
    listing = _as(acme["rita"]).get(reverse("space_invite", args=["acme"]))
    assert listing.status_code == 200
    rows = dict(re.findall(r'<tr id="invitation-(\d+)">\s*<td data-label="Role">(\w+)</td>', listing.text))
    assert sorted(rows.values()) == ["owner", "reader"]  # the used link is not listed
    revoked_pk = Invitation.objects.get(role="owner").pk
    assert '<td data-label="Made by">nora</td>' in listing.text
    assert f'action="/spaces/acme/invitations/{revoked_pk}/revoke"' in listing.text

    # A reviewer of the space may not revoke (nor list); an outsider does not see the space.
    by_reviewer = _as(acme["sam"]).post(reverse("space_invitation_revoke", args=["acme", revoked_pk]), follow=True)
    assert "Only an owner of 'acme'" in " ".join(str(m) for m in by_reviewer.context["messages"])
    assert _as(acme["sam"]).get(reverse("space_invite", args=["acme"])).status_code == 403
    outsider = _as(get_user_model().objects.create_user("ulf", password="x-long-password-4", is_staff=True))
    assert outsider.post(reverse("space_invitation_revoke", args=["acme", revoked_pk])).status_code == 404
    assert outsider.get(reverse("space_invite", args=["acme"])).status_code == 404
    assert Invitation.objects.get(pk=revoked_pk).revoked_at is None

    done = _as(acme["rita"]).post(reverse("space_invitation_revoke", args=["acme", revoked_pk]), follow=True)
    assert "Revoked the owner link made by nora" in " ".join(str(m) for m in done.context["messages"])
    invitation = Invitation.objects.get(pk=revoked_pk)
    assert invitation.revoked_at is not None and invitation.revoked_by == acme["rita"]
    event = AuditEvent.objects.get(event_type="space.invitation_revoked")
    assert event.subject_id == "acme" and event.extra["invitation"] == revoked_pk
    assert event.extra["invited_by"] == "nora" and event.actor == "rita"
    assert f'id="invitation-{revoked_pk}"' not in done.text

    # The revoked link answers exactly like an unknown one, to a GET and to a sign-up.
    unknown = _open("y" * 43, 6)
    gone = _open(revoked, 7)
    assert gone.status_code == unknown.status_code == 404
    strip = r'"X-CSRFToken": "[^"]+"'
    assert re.sub(strip, "", gone.text) == re.sub(strip, "", unknown.text)
    assert _join(revoked, username="mallory").status_code == 404
    assert not get_user_model().objects.filter(username="mallory").exists()
    # Revoking it again, or a used link, finds nothing to revoke; the kept link still works.
    used_pk = Invitation.objects.get(used_at__isnull=False).pk
    for pk in (revoked_pk, used_pk):
        again = _as(acme["rita"]).post(reverse("space_invitation_revoke", args=["acme", pk]), follow=True)
        assert "No open invitation" in " ".join(str(m) for m in again.context["messages"])
    assert AuditEvent.objects.filter(event_type="space.invitation_revoked").count() == 1
    assert _open(kept, 8).status_code == 200


def test_the_invitation_pages_send_the_sites_origin_as_referrer_never_the_link(acme):
    token = _invite(acme["rita"])
    page = Client().get(reverse("invitation"), {"token": token})
    # strict-origin: the sign-up form's POST carries a real Origin (no-referrer made it "null",
    # which Django's CSRF check refuses), and no request from the page carries the token.
    assert page["Referrer-Policy"] == "strict-origin"
    made = _as(acme["rita"]).post(reverse("space_invite", args=["acme"]), {"role": "reader"})
    assert made["Referrer-Policy"] == "strict-origin"
