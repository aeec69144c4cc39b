"""An invitation in a real browser, with two accounts at phone and desktop
size: an owner makes a link, a new person opens it in a second browser (no
session, no cookie of the owner's), makes an account, and is a member; the
owner lists the open links and revokes one, which then reads as unknown.

The sign-up form is a cross-context POST from a page reached by a link: with
``Referrer-Policy: no-referrer`` Chromium sent it with ``Origin: null`` and
Django's CSRF check refused it (403), which only a real browser shows."""

# ruff: noqa: F811  (test_inbox_browser.py's ``browser`` fixture, imported, is an argument)
from __future__ import annotations

import pytest

from reviews import actions
from reviews.invitation_models import Invitation
from reviews.space_models import Membership
from tests.test_accessibility_browser import assert_no_serious, axe_violations
from tests.test_inbox_browser import SIZES, assert_fits, browser, pytestmark  # noqa: F401  (fixture, marks)
from tests.test_space_browser import sign_in

NEW_PASSWORD = "a-new-long-password-9"


@pytest.fixture
def acme(reviewer):
    actions.create_space("acme", kind="team", name="Acme Corp", actor=reviewer)
    return reviewer


def _make_link(page, live_server, role: str) -> str:
    page.goto(f"{live_server.url}/spaces/acme/")
    page.select_option("#invite-form select[name=role]", role)
    page.click("#invite-form button[type=submit]")
    link = page.input_value("#invitation-panel textarea")
    assert link.startswith(f"{live_server.url}/invite/?token=")
    return link


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_an_owner_invites_and_the_new_person_joins_in_another_browser(browser, live_server, acme, size):
    owner_context, owner = sign_in(browser, live_server, size, "rita")
    newcomer_context = browser.new_context(**SIZES[size])
    try:
        link = _make_link(owner, live_server, "reviewer")
        spare = _make_link(owner, live_server, "reader")

        # The new person: another browser context, signed out, opening the link as sent.
        page = newcomer_context.new_page()
        page.set_default_timeout(10_000)
        page.goto(link)
        assert "rita invites you to acme as a reviewer" in page.inner_text("#invitation-summary")
        assert_fits(page, size)
        assert_no_serious(axe_violations(page, f"invitation, {size}"))
        page.fill("input[name=username]", "olga")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.fill("input[name=password2]", NEW_PASSWORD)
        with page.expect_response(lambda r: r.url.endswith("/invite/") and r.request.method == "POST") as sent:
            page.click("#invitation-form button[type=submit]")
        # The form's Origin is the site's own (strict-origin), so the CSRF check lets it through.
        assert sent.value.request.header_value("origin") == live_server.url
        assert sent.value.status == 302, f"the sign-up POST answered {sent.value.status}"
        page.wait_for_selector("text=your account is ready")
        assert Membership.objects.get(space__slug="acme", user__username="olga").role == "reviewer"

        # They sign in with it and find the space among theirs.
        page.fill("input[name=username]", "olga")
        page.fill("input[name=password]", NEW_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("#pending-count", state="attached")
        page.goto(f"{live_server.url}/spaces/")
        assert page.locator("#space-acme").count() == 1

        # The owner lists the open links (the used one is gone) and revokes the spare one.
        owner.goto(f"{live_server.url}/spaces/acme/")
        owner.click("#invitations-link")
        owner.wait_for_selector("#invitation-list")
        spare_pk = Invitation.objects.get(role="reader").pk
        assert owner.locator("#invitation-list tbody tr").count() == 1
        assert owner.inner_text(f"#invitation-{spare_pk}").split()[:2] == ["reader", "rita"]
        assert_fits(owner, size)
        assert_no_serious(axe_violations(owner, f"open invitations, {size}"))
        owner.click(f"#invitation-{spare_pk} button")
        owner.wait_for_selector("#invitations-none")
        assert Invitation.objects.get(pk=spare_pk).revoked_at is not None

        # The revoked link now reads as an unknown one.
        page.goto(spare)
        assert page.locator("#invitation-invalid").count() == 1
        assert "acme" not in page.content().lower()
    finally:
        newcomer_context.close()
        owner_context.close()
