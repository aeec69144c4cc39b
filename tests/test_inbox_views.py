"""The review inbox: pending proposals decided in place, with and without htmx."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from reviews import actions
from reviews.models import Proposal, ProposalState, Record, RecordStatus
from tests.conftest import GOOD_BODY, content
from tests.shared_data import for_a_test, fresh, make_people, shared

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(scope="module")
def people_world(django_db_setup, django_db_blocker):
    """rita and claude-code (and team-bot, which only ``team_agent`` hands
    out), made once for the module: every test here signs rita in, and most
    have claude-code propose. The conftest's fixtures over them
    (``signed_in``, ``create_proposal``, ``make_record``, ``second_reviewer``,
    ``team_agent``) get this test's copies through the two overrides below."""
    yield from shared(make_people, django_db_blocker)


@pytest.fixture
def reviewer(people_world, db):
    return for_a_test(people_world.reviewer)


@pytest.fixture
def agent(people_world, db):
    return fresh(people_world.agent)


@pytest.fixture
def team_agent(people_world, db):
    return fresh(people_world.team_agent)


def header_count(html: str) -> int:
    match = re.search(r'id="pending-count">\s*(\d+)\s*<', html)
    assert match
    return int(match.group(1))


# --------------------------------------------------------------------------- access


SITE_PAGES = ["/", "/due/", "/disputed/", "/records/", "/agents/", "/settings/"]


@pytest.mark.parametrize("path", SITE_PAGES)
def test_anonymous_visitors_are_sent_to_login(client, reviewer, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("path", SITE_PAGES)
def test_an_agent_bearer_token_opens_no_site_page(client, reviewer, path):
    _agent, token = actions.create_agent("bearer-bot", spaces=["team"], actor=reviewer)
    response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_an_agent_bearer_token_cannot_accept_a_proposal(client, reviewer, create_proposal):
    _agent, token = actions.create_agent("bearer-bot", spaces=["team"], actor=reviewer)
    proposal = create_proposal()
    response = client.post(reverse("proposal_accept", args=[proposal.public_id]), HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.PENDING


def test_posts_without_a_csrf_token_are_refused(reviewer, create_proposal):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(reviewer)
    proposal = create_proposal()
    response = strict.post(reverse("proposal_accept", args=[proposal.public_id]))
    assert response.status_code == 403
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.PENDING


def test_every_page_carries_the_csrf_header_for_htmx(signed_in):
    html = signed_in.get("/").content.decode()
    assert re.search(r'<body hx-headers=\'\{"X-CSRFToken": "[^"]+"\}\'', html)
    assert "vetted/htmx.min.js" in html and "cdn" not in html.lower()


# --------------------------------------------------------------------------- the list


def test_inbox_lists_pending_proposals_oldest_first_with_the_count(signed_in, create_proposal):
    first, second = create_proposal(1), create_proposal(2)
    html = signed_in.get("/").content.decode()
    assert header_count(html) == 2
    assert html.index(first.title) < html.index(second.title)
    assert f'id="proposal-{first.pk}"' in html
    assert "Seen in the repository" in html and "claude-code" in html


def test_inbox_shows_a_word_diff_for_a_revision(signed_in, agent, record):
    actions.propose_revision(
        record,
        agent=agent,
        reason="The repository moved",
        body=GOOD_BODY.replace("acme/billing-api", "acme/billing-service"),
    )
    html = signed_in.get("/").content.decode()
    assert "<del>acme/billing-api</del>" in html
    assert "<ins>acme/billing-service</ins>" in html


def test_inbox_shows_the_record_and_reason_for_a_retirement_and_a_dispute(signed_in, agent, make_record):
    retiring = make_record(title="Old deploy host", body=f"{GOOD_BODY} Host one.")
    disputed = make_record(title="Payment provider", body=f"{GOOD_BODY} Host two.")
    actions.propose_retirement(retiring, agent=agent, reason="The host was shut down")
    actions.dispute_record(disputed, agent=agent, reason="We changed provider in May")
    html = signed_in.get("/").content.decode()
    for text in ("Old deploy host", "The host was shut down", "Payment provider", "We changed provider in May"):
        assert text in html
    assert reverse("record_detail", args=[retiring.public_id]) in html


@pytest.fixture(scope="class")
def thirty_world(people_world, django_db_blocker):
    """30 pending creates from claude-code ("Proposal number 0" to 29, as the
    conftest's ``create_proposal`` makes them), made once for the class."""
    yield from shared(lambda: [people_world.create_proposal(i) for i in range(30)], django_db_blocker)


class TestThirtyProposals:
    """The paging tests over 30 proposals, more than a page (25), made once for the class."""

    @pytest.fixture
    def thirty(self, thirty_world, db):
        return for_a_test(thirty_world)

    def test_inbox_paginates_with_load_more(self, signed_in, thirty):
        made = thirty
        html = signed_in.get("/").content.decode()
        assert header_count(html) == 30
        assert html.count("data-card tabindex") == 25
        cursor = re.search(r"\?after=(\d+)", html).group(1)
        more = signed_in.get(f"/?after={cursor}", **HX)
        page = more.content.decode()
        assert page.count("data-card tabindex") == 5
        assert "<html" not in page and made[29].title in page and made[0].title not in page
        assert "load-more" not in page

    def test_load_more_cursor_is_stable_when_cards_are_decided(self, signed_in, reviewer, thirty):
        made = thirty
        html = signed_in.get("/").content.decode()
        cursor = re.search(r"\?after=(\d+)", html).group(1)
        for p in made[:3]:
            actions.reject_proposal(p, actor=reviewer)
        page = signed_in.get(f"/?after={cursor}").content.decode()
        assert made[25].title in page and made[24].title not in page


def test_similar_records_are_listed_for_a_create(signed_in, agent, make_record):
    existing = make_record(title="Billing API repository location")
    proposal = actions.propose_create(
        agent=agent,
        reason="Seen in the repository",
        **content(title="Where the billing API repository lives", body=f"{GOOD_BODY} It moved last year."),
    )
    html = signed_in.get(reverse("proposal_similar", args=[proposal.public_id]), **HX).content.decode()
    assert existing.title in html and "similarity" in html and "score" not in html
    assert reverse("record_detail", args=[existing.public_id]) in html


def test_the_reviewer_sees_other_agents_identical_and_similar_proposals_for_a_create(signed_in, agent, team_agent):
    # Agents are never told about each other's proposals, so the cluster is the reviewer's to see.
    first = actions.propose_create(agent=agent, reason="Seen in the repository", **content())
    twin = actions.propose_create(agent=team_agent, reason="Also seen", **content())
    near = actions.propose_create(
        agent=team_agent,
        reason="Seen again",
        **content(title="Billing API repository (again)", body=GOOD_BODY.replace("every weekday", "each weekday")),
    )
    html = signed_in.get(reverse("proposal_similar", args=[first.public_id]), **HX).content.decode()
    assert f'id="similar-pending-{first.pk}"' in html
    assert twin.public_id in html and "identical" in html and "team-bot" in html
    assert near.public_id in html and "similarity" in html


def test_a_proposal_body_is_rendered_from_markdown_safely(signed_in, agent):
    actions.propose_create(
        agent=agent,
        reason="Seen in the repository",
        **content(
            title="Hostile body",
            body="**Bold claim** here <script>alert('x')</script> and "
            "[click me](javascript:alert(1)) in the billing repository notes.",
        ),
    )
    html = signed_in.get("/").content.decode()
    assert "<strong>Bold claim</strong>" in html
    assert "<script>alert" not in html
    assert 'href="javascript:' not in html


# --------------------------------------------------------------------------- accept


def test_accept_with_htmx_swaps_the_card_and_updates_the_count(signed_in, create_proposal):
    proposal, _other = create_proposal(1), create_proposal(2)
    response = signed_in.post(reverse("proposal_accept", args=[proposal.public_id]), **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert f'id="proposal-{proposal.pk}"' in html and "Accepted" in html
    assert re.search(r'hx-swap-oob="true" id="pending-count">1<', html)
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.ACCEPTED
    assert proposal.result_record.public_id in html


def test_accept_without_javascript_redirects_back_with_a_message(signed_in, create_proposal):
    proposal = create_proposal()
    response = signed_in.post(reverse("proposal_accept", args=[proposal.public_id]), {"next": "/?after=1"})
    assert response.status_code == 302 and response["Location"] == "/?after=1"
    page = signed_in.get("/").content.decode()
    assert f"Accepted: {proposal.title}." in page  # named by title, not id
    assert 'id="undo-toast"' in page
    assert Record.objects.filter(status=RecordStatus.APPROVED).count() == 1


def test_redirect_back_refuses_other_sites(signed_in, create_proposal):
    proposal = create_proposal()
    response = signed_in.post(reverse("proposal_accept", args=[proposal.public_id]), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("home")


def test_accept_of_a_proposal_decided_in_another_tab_says_already_decided(
    signed_in, reviewer, second_reviewer, create_proposal
):
    proposal = create_proposal()
    actions.reject_proposal(proposal, actor=second_reviewer, note="Not needed")
    response = signed_in.post(reverse("proposal_accept", args=[proposal.public_id]), **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "already rejected by sam" in html
    assert 'role="alert"' in html


def test_conflict_without_javascript_is_a_message_not_a_500(signed_in, second_reviewer, create_proposal):
    proposal = create_proposal()
    actions.accept_proposal(proposal, actor=second_reviewer)
    response = signed_in.post(reverse("proposal_reject", args=[proposal.public_id]), follow=True)
    assert response.status_code == 200
    assert "already accepted by sam" in response.content.decode()


def test_accept_of_an_unknown_proposal_is_a_message(signed_in):
    response = signed_in.post(reverse("proposal_accept", args=["prop_000000000000"]), **HX)
    assert response.status_code == 200
    assert "No proposal with id" in response.content.decode()


def test_accepting_a_dispute_retires_the_record(signed_in, agent, record):
    proposal = actions.dispute_record(record, agent=agent, reason="It moved to another repository")
    signed_in.post(reverse("proposal_accept", args=[proposal.public_id]), **HX)
    record.refresh_from_db()
    assert record.status == RecordStatus.RETIRED


# --------------------------------------------------------------------------- reject


def test_reject_with_a_note_the_agent_can_read(signed_in, create_proposal):
    proposal = create_proposal()
    response = signed_in.post(
        reverse("proposal_reject", args=[proposal.public_id]), {"note": "Duplicate of the wiki"}, **HX
    )
    assert response.status_code == 200
    assert "Rejected" in response.content.decode() and "Duplicate of the wiki" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.REJECTED and proposal.decision_note == "Duplicate of the wiki"


def test_reject_without_a_note_is_allowed(signed_in, create_proposal):
    proposal = create_proposal()
    response = signed_in.post(reverse("proposal_reject", args=[proposal.public_id]))
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.REJECTED


# --------------------------------------------------------------------------- revise


def test_revise_form_is_a_partial_with_htmx_and_a_page_without(signed_in, create_proposal):
    proposal = create_proposal()
    url = reverse("proposal_revise", args=[proposal.public_id])
    partial = signed_in.get(url, **HX).content.decode()
    page = signed_in.get(url).content.decode()
    assert "<html" not in partial and 'name="title"' in partial and proposal.title in partial
    assert "<html" in page and 'name="body"' in page


def test_revise_accepts_the_edited_version_and_keeps_the_proposed_text(signed_in, create_proposal):
    proposal = create_proposal()
    url = reverse("proposal_revise", args=[proposal.public_id])
    response = signed_in.post(
        url,
        {
            "title": "Billing API repository (edited)",
            "body": proposal.body,
            "kind": "reference",
            "space": "team",
            "tags": "billing, repos, edited",
        },
        **HX,
    )
    assert response.status_code == 200
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.ACCEPTED
    assert proposal.title == "Proposal number 0"  # what the agent proposed stays
    assert proposal.result_record.title == "Billing API repository (edited)"
    assert proposal.result_record.kind == "reference" and "edited" in proposal.result_record.tags
    assert set(proposal.reviewer_changes) == {"title", "kind", "tags"}


def test_revise_with_invalid_fields_shows_them_and_changes_nothing(signed_in, create_proposal):
    proposal = create_proposal()
    url = reverse("proposal_revise", args=[proposal.public_id])
    response = signed_in.post(url, {"title": "x", "body": proposal.body, "kind": "fact", "space": "team", "tags": ""})
    assert response.status_code == 400
    assert "title" in response.context["errors"]
    htmx = signed_in.post(url, {"title": "x", "body": proposal.body, "kind": "fact", "space": "team", "tags": ""}, **HX)
    assert htmx.status_code == 200 and 'class="error"' in htmx.content.decode()
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.PENDING


def test_revise_with_nothing_changed_says_accept_instead(signed_in, create_proposal):
    proposal = create_proposal()
    url = reverse("proposal_revise", args=[proposal.public_id])
    response = signed_in.post(
        url,
        {"title": proposal.title, "body": proposal.body, "kind": "fact", "space": "team", "tags": "billing, repos"},
        **HX,
    )
    assert "accept it as proposed" in response.content.decode()


def test_correcting_a_dispute_supersedes_the_record(signed_in, agent, record):
    proposal = actions.dispute_record(record, agent=agent, reason="It moved to another repository")
    form = signed_in.get(reverse("proposal_revise", args=[proposal.public_id]), **HX).content.decode()
    assert record.title in form
    signed_in.post(
        reverse("proposal_revise", args=[proposal.public_id]),
        {"title": record.title, "body": GOOD_BODY.replace("main", "trunk"), "kind": "fact", "tags": "billing, repos"},
        **HX,
    )
    record.refresh_from_db()
    assert record.status == RecordStatus.SUPERSEDED
    assert "trunk" in record.superseded_by.body


def test_cancel_returns_the_card(signed_in, create_proposal):
    proposal = create_proposal()
    html = signed_in.get(reverse("proposal_card", args=[proposal.public_id]), **HX).content.decode()
    assert f'id="proposal-{proposal.pk}"' in html and "Accept" in html
    plain = signed_in.get(reverse("proposal_card", args=[proposal.public_id]))
    assert plain.status_code == 302 and plain["Location"].endswith(f"#proposal-{proposal.pk}")


# --------------------------------------------------------------------------- bulk


def test_bulk_accept_decides_each_and_reports_failures(signed_in, second_reviewer, create_proposal):
    a, b, c = create_proposal(1), create_proposal(2), create_proposal(3)
    actions.reject_proposal(c, actor=second_reviewer)
    ids = [a.public_id, b.public_id, c.public_id]
    # The three are alike (possible duplicates): the reviewer confirmed them on the confirm page.
    response = signed_in.post(reverse("proposal_bulk"), {"op": "accept", "ids": ids, "flagged_ok": ids}, follow=True)
    html = response.content.decode()
    assert f"Accepted 2: {a.title}, {b.title}." in html
    assert html.count('name="event"') == 2  # one Undo for both
    assert "already rejected by sam" in html
    assert Proposal.objects.filter(state=ProposalState.ACCEPTED).count() == 2


def test_bulk_reject_with_a_note(signed_in, create_proposal):
    a, b = create_proposal(1), create_proposal(2)
    signed_in.post(
        reverse("proposal_bulk"), {"op": "reject", "note": "Out of space", "ids": [a.public_id, b.public_id]}
    )
    assert set(Proposal.objects.values_list("decision_note", flat=True)) == {"Out of space"}


def test_bulk_without_a_selection_is_a_message(signed_in):
    response = signed_in.post(reverse("proposal_bulk"), {"op": "accept"}, follow=True)
    assert "Select one or more proposals" in response.content.decode()


def test_an_htmx_request_after_the_session_ended_redirects_the_whole_page(client, reviewer, create_proposal):
    proposal = create_proposal()
    response = client.post(
        reverse("proposal_accept", args=[proposal.public_id]),
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/?after=3",
    )
    assert response.status_code == 204
    assert response["HX-Redirect"] == f"{reverse('login')}?next=%2F%3Fafter%3D3"
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.PENDING


def test_static_assets_are_vendored_and_the_app_is_installable(signed_in):
    from django.contrib.staticfiles import finders

    for name in ("vetted/htmx.min.js", "vetted/keys.js", "vetted/manifest.webmanifest", "vetted/icon.svg"):
        assert finders.find(name), name
    html = signed_in.get("/").content.decode()
    assert 'rel="manifest"' in html and "prefers-color-scheme" in Path(finders.find("vetted/site.css")).read_text()
