"""Due for review, disputed, records (browse, search, as an agent sees it) and the record page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from reviews import actions
from reviews.models import Proposal, ProposalState, Record, RecordStatus
from tests.conftest import GOOD_BODY

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def signed_in(client, reviewer):
    client.force_login(reviewer)
    return client


def make_overdue(record):
    Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=3))
    record.refresh_from_db()
    return record


# --------------------------------------------------------------------------- due for review


def test_due_lists_only_overdue_approved_records(signed_in, make_record):
    overdue = make_overdue(make_record(title="Old on-call rota", body=f"{GOOD_BODY} Rota."))
    fresh = make_record(title="Fresh on-call rota", body=f"{GOOD_BODY} Fresh.")
    html = signed_in.get(reverse("due")).content.decode()
    assert overdue.title in html and fresh.title not in html
    assert f'id="record-{overdue.pk}"' in html
    assert re.search(r'id="due-count">1<', html)


def test_verify_in_one_click_sets_the_kinds_default_review_date(signed_in, make_record):
    record = make_overdue(make_record())
    response = signed_in.post(reverse("record_verify", args=[record.public_id]), **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Verified" in html and re.search(r'hx-swap-oob="true" id="due-count">0<', html)
    record.refresh_from_db()
    assert record.review_by == timezone.localdate() + timedelta(days=180)  # fact: 180 days


def test_verify_without_javascript_redirects_back(signed_in, make_record):
    record = make_overdue(make_record())
    response = signed_in.post(reverse("record_verify", args=[record.public_id]), {"next": reverse("due")})
    assert response.status_code == 302 and response["Location"] == reverse("due")
    assert "Verified" in signed_in.get(reverse("due")).content.decode()


def test_verify_of_an_edited_record_shows_the_reason(signed_in, record):
    Record.objects.filter(pk=record.pk).update(body=record.body + " Edited behind the reviewer's back.")
    response = signed_in.post(reverse("record_verify", args=[record.public_id]), **HX)
    assert response.status_code == 200
    assert "edited since approval" in response.content.decode()


def test_retire_needs_a_note(signed_in, record):
    response = signed_in.post(reverse("record_retire", args=[record.public_id]), {"note": ""}, **HX)
    assert 'role="alert"' in response.content.decode()
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED
    signed_in.post(reverse("record_retire", args=[record.public_id]), {"note": "The service is gone"}, **HX)
    record.refresh_from_db()
    assert record.status == RecordStatus.RETIRED


def test_retiring_twice_says_it_is_retired(signed_in, reviewer, record):
    actions.retire_record(record, actor=reviewer, note="Gone")
    response = signed_in.post(reverse("record_retire", args=[record.public_id]), {"note": "Gone"}, follow=True)
    assert response.status_code == 200
    assert "it is retired" in response.content.decode()


def test_revise_a_record_makes_a_successor(signed_in, record):
    url = reverse("record_revise", args=[record.public_id])
    assert 'name="body"' in signed_in.get(url, **HX).content.decode()
    response = signed_in.post(
        url,
        {
            "title": record.title,
            "body": GOOD_BODY.replace("weekday", "weekday at noon"),
            "kind": "fact",
            "tags": "billing, repos",
        },
    )
    record.refresh_from_db()
    assert record.status == RecordStatus.SUPERSEDED
    assert response.status_code == 302
    assert response["Location"] == reverse("record_detail", args=[record.superseded_by.public_id])


def test_revise_a_record_with_a_bad_body_shows_the_error(signed_in, record):
    response = signed_in.post(
        reverse("record_revise", args=[record.public_id]),
        {"title": record.title, "body": "short", "kind": "fact", "tags": ""},
    )
    assert response.status_code == 400 and "body" in response.context["errors"]


# --------------------------------------------------------------------------- disputed


def test_disputed_lists_the_dispute_reasons_and_clear_restores_the_record(signed_in, agent, record):
    actions.dispute_record(record, agent=agent, reason="The repository was renamed in March")
    html = signed_in.get(reverse("disputed")).content.decode()
    assert record.title in html and "The repository was renamed in March" in html
    response = signed_in.post(reverse("record_clear_dispute", args=[record.public_id]), {"note": "Checked"}, **HX)
    assert f"Kept record: {record.title}." in response.content.decode()
    record.refresh_from_db()
    assert record.status == RecordStatus.APPROVED
    assert Proposal.objects.get(action="dispute").state == ProposalState.REJECTED


def test_clear_dispute_on_an_undisputed_record_is_a_message(signed_in, record):
    response = signed_in.post(reverse("record_clear_dispute", args=[record.public_id]), follow=True)
    assert "not disputed; nothing to clear" in response.content.decode()


# --------------------------------------------------------------------------- records


def test_records_browse_filters_by_kind_space_status_tag_and_agent(signed_in, reviewer, make_record):
    fact = make_record(title="A team fact", body=f"{GOOD_BODY} One.", tags=["billing"])
    pref = make_record(
        title="A personal preference", body=f"{GOOD_BODY} Two.", kind="preference", space="personal", tags=["editor"]
    )
    actions.retire_record(fact, actor=reviewer, note="Gone")
    assert pref.title in signed_in.get("/records/?kind=preference").content.decode()
    assert fact.title not in signed_in.get("/records/?kind=preference").content.decode()
    assert fact.title not in signed_in.get("/records/?space=personal").content.decode()
    assert fact.title in signed_in.get("/records/?status=retired").content.decode()
    assert pref.title not in signed_in.get("/records/?status=retired").content.decode()
    assert pref.title in signed_in.get("/records/?tag=editor").content.decode()
    assert fact.title not in signed_in.get("/records/?tag=editor").content.decode()
    assert pref.title in signed_in.get("/records/?agent=claude-code").content.decode()
    assert pref.title not in signed_in.get("/records/?agent=nobody").content.decode()


def test_records_search_uses_the_engine_and_shows_what_is_withheld(signed_in, reviewer, make_record):
    live = make_record(title="Billing deploy window", body=f"{GOOD_BODY} Deploy window is morning.")
    gone = make_record(title="Billing deploy freeze", body=f"{GOOD_BODY} Deploy freeze in December.")
    actions.retire_record(gone, actor=reviewer, note="No freeze any more")
    html = signed_in.get("/records/?q=billing+deploy&mode=keyword").content.decode()
    assert live.title in html
    assert "retired: 1" in html
    assert gone.title in html  # named in the not-delivered list, with the reason


def test_as_an_agent_sees_it_hides_other_spaces_entirely(signed_in, make_record):
    team = make_record(title="Team deploy notes", body=f"{GOOD_BODY} Team deploy.")
    personal = make_record(title="Personal deploy notes", body=f"{GOOD_BODY} Personal deploy.", space="personal")
    html = signed_in.get("/records/?q=deploy+notes&mode=keyword&as_agent=1&reader_spaces=team").content.decode()
    assert team.title in html and personal.title not in html
    assert "What an agent with spaces team receives" in html
    everyone = signed_in.get("/records/?q=deploy+notes&mode=keyword").content.decode()
    assert personal.title in everyone


def test_overdue_records_are_withheld_from_the_agent_view(signed_in, make_record):
    overdue = make_overdue(make_record(title="Overdue deploy notes", body=f"{GOOD_BODY} Overdue deploy."))
    html = signed_in.get("/records/?q=overdue+deploy&mode=keyword&as_agent=1&reader_spaces=team").content.decode()
    assert "overdue: 1" in html
    assert overdue.title in html and "Nothing delivered" in html


def test_records_search_with_a_bad_mode_is_a_message(signed_in):
    response = signed_in.get("/records/?q=anything&mode=telepathy")
    assert response.status_code == 200 and "allowed: hybrid" in response.content.decode()


# --------------------------------------------------------------------------- the record page


def test_record_page_shows_fields_checksum_chain_and_events(signed_in, reviewer, record):
    new = actions.revise_record(record, actor=reviewer, changes={"body": GOOD_BODY + " Now with a release train."})
    html = signed_in.get(reverse("record_detail", args=[record.public_id])).content.decode()
    assert "text matches approval" in html and record.approved_checksum in html
    assert reverse("record_detail", args=[new.public_id]) in html  # the newer version
    assert "record.revised" in html or "proposal.accepted" in html
    assert "not delivered to agents: superseded" in html
    newer = signed_in.get(reverse("record_detail", args=[new.public_id])).content.decode()
    assert reverse("record_detail", args=[record.public_id]) in newer  # the older version
    assert "record.revised" in newer


def test_record_page_flags_text_edited_since_approval(signed_in, record):
    Record.objects.filter(pk=record.pk).update(title="Changed without review")
    html = signed_in.get(reverse("record_detail", args=[record.public_id])).content.decode()
    assert "edited since approval" in html


def test_record_page_renders_a_hostile_body_safely(signed_in, make_record):
    record = make_record(
        title="Hostile record",
        body="Look at this <img src=x onerror=alert(1)> and "
        "[a link](javascript:alert(document.cookie)) in the billing notes.",
    )
    html = signed_in.get(reverse("record_detail", args=[record.public_id])).content.decode()
    assert "<img" not in html and "onerror=alert" not in html.replace("&lt;img src=x onerror=alert(1)&gt;", "")
    assert 'href="javascript:' not in html


def test_unknown_record_is_404(signed_in):
    assert signed_in.get(reverse("record_detail", args=["rec_000000000000"])).status_code == 404
