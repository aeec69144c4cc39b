"""Triage on the inbox (issue 13 §2): filters as query parameters with
counts, sorts (disputes first by default), cursor paging under a filter,
clear errors for bad values, "accept/reject all that match", and the
compact view remembered per reviewer."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from inbox import filters as inbox_filters
from reviews import actions
from reviews.models import AuditEvent, Proposal, ProposalState, RecordStatus, ReviewerPreference
from tests.conftest import GOOD_BODY, content
from tests.shared_data import for_a_test, fresh, make_people, shared

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def signed_in(client, reviewer):
    client.force_login(reviewer)
    return client


def age(proposal: Proposal, minutes: int) -> Proposal:
    """Make ``proposal`` ``minutes`` old (creation order decides the sorts)."""
    Proposal.objects.filter(pk=proposal.pk).update(created_at=timezone.now() - timedelta(minutes=minutes))
    return proposal


def _mixed(agent, team_agent, make_record):
    """Six pending proposals: three creates, a revise, a retire and a dispute,
    from two agents, created in this order (the dispute last, i.e. newest)."""
    billing = make_record(title="Billing API repository", tags=["billing"])
    deploys = make_record(title="Deploy window", kind="decision", tags=["deploys"])
    staging = make_record(title="Staging database host", tags=["staging", "database"])
    p = {}
    p["postgres"] = actions.propose_create(
        agent=agent,
        reason="Read in the infra channel",
        **content(title="Postgres 16 in production", body=f"{GOOD_BODY} Postgres.", tags=["db"]),
    )
    p["friday"] = actions.propose_create(
        agent=team_agent,
        reason="Heard in standup",
        **content(title="No Friday deploys", body=f"{GOOD_BODY} Fridays.", kind="decision", tags=["deploys"]),
    )
    p["percent"] = actions.propose_create(
        agent=agent,
        reason="From the dashboard",
        **content(title="Uptime is 100%_ok", body=f"{GOOD_BODY} Uptime.", space="personal", tags=["ops"]),
    )
    p["revise"] = actions.propose_revision(
        billing, agent=agent, reason="The repository moved", body=GOOD_BODY.replace("acme", "acme-corp")
    )
    p["retire"] = actions.propose_retirement(deploys, agent=agent, reason="The window was dropped last month")
    p["dispute"] = actions.dispute_record(staging, agent=team_agent, reason="The host was renamed yesterday")
    order = ["postgres", "friday", "percent", "revise", "retire", "dispute"]
    for minutes, key in zip(range(60, 0, -10), order, strict=True):
        age(p[key], minutes)
    return p


@pytest.fixture(scope="class")
def mixed_world(django_db_setup, django_db_blocker):
    """The people and ``_mixed``'s proposals, made once for the class that uses them."""

    def build():
        people = make_people()
        return people, _mixed(people.agent, people.team_agent, people.make_record)

    yield from shared(build, django_db_blocker)


def listed(response) -> list[int]:
    """The pks of the cards or lines on the page, in order."""
    return [int(pk) for pk in re.findall(r'id="proposal-(\d+)" data-card', response.content.decode())]


def pks(*proposals) -> list[int]:
    return [p.pk for p in proposals]


def confirmed_ids(response) -> list[str]:
    """The ids an "all that match" confirmation lists."""
    return re.findall(r'name="ids" value="([^"]+)"', response.content.decode())


class TestSixProposals:
    """The tests over the six proposals of ``_mixed``, made once for the class
    (tests/shared_data.py); each test gets its own copies of them and of rita."""

    @pytest.fixture
    def reviewer(self, mixed_world, db):
        return fresh(mixed_world[0].reviewer)

    @pytest.fixture
    def mixed(self, mixed_world, db):
        return for_a_test(mixed_world[1])

    # --------------------------------------------------------------------------- each filter
    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("action=create", ["postgres", "friday", "percent"]),
            ("action=revise", ["revise"]),
            ("action=retire", ["retire"]),
            ("action=dispute", ["dispute"]),
            ("agent=team-bot", ["dispute", "friday"]),
            ("kind=decision", ["friday", "retire"]),  # a retire's kind is its target's
            ("space=personal", ["percent"]),
            ("tag=deploys", ["friday", "retire"]),  # a retire's tags are its target's
            ("tag=database", ["dispute"]),
            ("q=postgres", ["postgres"]),
            ("q=renamed", ["dispute"]),  # the reason
            ("q=window", ["retire"]),  # the target record's title
            ("q=acme-corp", ["revise"]),  # the body
        ],
    )
    def test_each_filter_lists_only_its_proposals(self, signed_in, mixed, query, expected):
        response = signed_in.get(f"/?{query}")
        assert response.status_code == 200
        assert listed(response) == pks(*(mixed[k] for k in expected))

    def test_filters_combine(self, signed_in, mixed):
        response = signed_in.get("/?action=create&agent=claude-code&kind=fact&space=team&tag=db&q=production")
        assert listed(response) == [mixed["postgres"].pk]
        assert listed(signed_in.get("/?action=create&agent=team-bot&space=personal")) == []

    def test_text_search_treats_like_wildcards_literally(self, signed_in, mixed):
        assert listed(signed_in.get("/?q=100%25_ok")) == [mixed["percent"].pk]
        # "%" and "_" alone would match everything as LIKE wildcards.
        assert listed(signed_in.get("/?q=%25")) == [mixed["percent"].pk]
        assert listed(signed_in.get("/?q=_")) == [mixed["percent"].pk]

    def test_an_empty_filtered_inbox_says_what_matched_nothing(self, signed_in, mixed):
        response = signed_in.get("/?q=nowhere-at-all")
        assert response.status_code == 200
        assert "No pending proposal matches q=nowhere-at-all" in response.content.decode()

    # --------------------------------------------------------------------------- counts

    def test_counts_are_of_pending_proposals_matching_the_other_filters(self, mixed):
        f, errors = inbox_filters.parse({"agent": "claude-code"})
        assert not errors
        counts = inbox_filters.counts(f)
        # Actions: only claude-code's (the other active filter); agents: all of them (their own facet ignored).
        assert dict(counts["action"]) == {"create": 2, "revise": 1, "retire": 1}
        assert dict(counts["agent"]) == {"claude-code": 4, "team-bot": 2}
        assert dict(counts["kind"]) == {"fact": 3, "decision": 1}
        assert dict(counts["space"]) == {"team": 3, "personal": 1}
        assert dict(counts["tag"]) == {"db": 1, "ops": 1, "billing": 1, "deploys": 1}

    def test_decided_proposals_are_not_counted(self, signed_in, reviewer, mixed):
        actions.reject_proposal(mixed["friday"], actor=reviewer)
        f, _ = inbox_filters.parse({})
        assert dict(inbox_filters.counts(f)["action"]) == {"create": 2, "revise": 1, "retire": 1, "dispute": 1}

    def test_the_filter_bar_shows_the_counts(self, signed_in, mixed):
        html = signed_in.get("/?action=create").content.decode()
        assert re.search(r'href="/\?action=dispute"[^>]*>Dispute <span class="n">1</span>', html)
        assert re.search(r'aria-current="true">Create <span class="n">3</span>', html)
        assert '<option value="team-bot">team-bot (1)</option>' in html
        assert "<strong>3</strong> match" in html

    # --------------------------------------------------------------------------- sorts

    def test_disputes_come_first_by_default_then_oldest(self, signed_in, mixed):
        assert listed(signed_in.get("/")) == pks(
            *(mixed[k] for k in ["dispute", "postgres", "friday", "percent", "revise", "retire"])
        )

    def test_sort_oldest_and_newest(self, signed_in, mixed):
        order = ["postgres", "friday", "percent", "revise", "retire", "dispute"]
        assert listed(signed_in.get("/?sort=oldest")) == pks(*(mixed[k] for k in order))
        assert listed(signed_in.get("/?sort=newest")) == pks(*(mixed[k] for k in reversed(order)))

    # --------------------------------------------------------------------------- bad values, all that match

    @pytest.mark.parametrize(
        ("query", "says"),
        [
            ("action=delete", "action='delete' is not one of: create, revise, retire, dispute"),
            ("kind=rumour", "kind='rumour' is not one of:"),
            ("space=galaxy", "space='galaxy' is not one of: personal, team, system"),
            ("tag=Not%20A%20Tag!", "tag:"),
            ("agent=nobody", "agent='nobody': no agent has that name"),
            ("sort=random", "sort='random' is not one of: disputes, oldest, newest"),
            ("view=grid", "view='grid' is not one of: cards, compact"),
            ("q=" + "x" * 201, "at most 200 allowed"),
        ],
    )
    def test_bad_filter_values_say_what_is_allowed_and_list_nothing(self, signed_in, mixed, query, says):
        response = signed_in.get(f"/?{query}")
        assert response.status_code == 400
        html = response.content.decode()
        assert says in html.replace("&#x27;", "'")
        assert listed(response) == []
        assert "Accept all" not in html

    def test_bulk_all_refuses_a_bad_filter(self, signed_in, mixed):
        response = signed_in.get("/proposals/bulk-all?action=nope&op=accept")
        assert response.status_code == 400
        assert "is not one of" in response.content.decode()
        assert signed_in.get("/proposals/bulk-all?op=delete").status_code == 400

    def test_reject_all_that_match_a_filter(self, signed_in, mixed):
        confirm = signed_in.get("/proposals/bulk-all?agent=claude-code&op=reject")
        html = confirm.content.decode()
        assert "Reject 4 proposals?" in html and "agent=claude-code" in html
        ids = confirmed_ids(confirm)
        assert set(ids) == {mixed[k].public_id for k in ["postgres", "percent", "revise", "retire"]}
        response = signed_in.post(
            "/proposals/bulk", {"ids": ids, "op": "reject", "note": "Batch", "next": "/?agent=claude-code"}
        )
        assert response.status_code == 302 and response["Location"] == "/?agent=claude-code"
        states = {k: Proposal.objects.get(pk=p.pk).state for k, p in mixed.items()}
        assert states == {
            "postgres": ProposalState.REJECTED,
            "percent": ProposalState.REJECTED,
            "revise": ProposalState.REJECTED,
            "retire": ProposalState.REJECTED,
            "friday": ProposalState.PENDING,
            "dispute": ProposalState.PENDING,
        }

    def test_accept_all_leaves_out_retirements_and_disputes(self, signed_in, mixed):
        confirm = signed_in.get("/proposals/bulk-all?op=accept")
        html = confirm.content.decode()
        assert "Accept 4 proposals?" in html
        assert "2 retirements or disputes left out" in html
        ids = confirmed_ids(confirm)
        assert mixed["retire"].public_id not in ids and mixed["dispute"].public_id not in ids
        # "Accept all, flagged included": the confirm's form names the flagged ones it listed.
        seen = re.findall(r'name="flagged_ok" value="([^"]+)"', html)
        signed_in.post("/proposals/bulk", {"ids": ids, "op": "accept", "next": "/", "flagged_ok": seen})
        assert Proposal.objects.filter(state=ProposalState.ACCEPTED, pk__in=pks(*mixed.values())).count() == 4
        assert mixed["retire"].target.status == RecordStatus.APPROVED

    def test_all_that_match_confirm_comes_as_a_partial_for_htmx(self, signed_in, mixed):
        response = signed_in.get("/proposals/bulk-all?action=create&op=reject", **HX)
        html = response.content.decode()
        assert html.lstrip().startswith('<section class="panel bulk-confirm"') and "Reject 3 proposals?" in html

    # --------------------------------------------------------------------------- the compact view

    def test_the_compact_view_is_remembered_per_device_by_a_post(self, client, reviewer, mixed):
        from django.test import Client

        client.force_login(reviewer)
        response = client.post("/inbox/view", {"view": "compact", "next": "/?action=create"})
        assert response.status_code == 302 and response["Location"] == "/?action=create"
        assert 'class="card line"' in client.get("/").content.decode()  # remembered on this device
        # The same reviewer on another device (a phone) still sees cards: nothing was stored for the account.
        phone = Client()
        phone.force_login(reviewer)
        html = phone.get("/").content.decode()
        assert 'class="card line"' not in html and '<article class="card"' in html
        client.post("/inbox/view", {"view": "cards", "next": "/"})
        assert 'class="card line"' not in client.get("/").content.decode()

    def test_a_get_with_view_shows_that_view_and_writes_nothing(self, client, reviewer, mixed):
        client.force_login(reviewer)
        events = AuditEvent.objects.count()
        response = client.get("/?view=compact")
        assert 'class="card line"' in response.content.decode()
        assert "vetted_inbox_view" not in response.cookies  # no cookie from a GET
        assert not ReviewerPreference.objects.filter(user=reviewer).exists()
        assert AuditEvent.objects.count() == events
        assert 'class="card line"' not in client.get("/").content.decode()  # the device did not choose

    def test_a_compact_line_has_one_tap_decisions_only_for_creates_and_revisions(self, signed_in, mixed):
        html = signed_in.get("/?view=compact").content.decode()
        for key in ("postgres", "revise"):
            line = re.search(rf'id="proposal-{mixed[key].pk}" data-card.*?</article>', html, re.S).group(0)
            public_id = mixed[key].public_id
            assert f"/proposals/{public_id}/accept" in line and f"/proposals/{public_id}/reject" in line
        for key in ("retire", "dispute"):
            line = re.search(rf'id="proposal-{mixed[key].pk}" data-card.*?</article>', html, re.S).group(0)
            assert "/accept" not in line and "/reject" not in line and "Review…" in line

    def test_a_compact_line_expands_without_javascript(self, signed_in, mixed):
        html = signed_in.get(f"/?view=compact&expand={mixed['dispute'].pk}").content.decode()
        card = re.search(rf'id="proposal-{mixed["dispute"].pk}" data-card.*?</article>', html, re.S).group(0)
        assert "The host was renamed yesterday" in card  # the full card, with the reason and its controls
        assert f"/proposals/{mixed['dispute'].public_id}/reject" in card

    def test_one_tap_accept_from_a_line_with_htmx(self, signed_in, mixed):
        response = signed_in.post(f"/proposals/{mixed['postgres'].public_id}/accept", {"next": "/"}, **HX)
        assert response.status_code == 200 and "decided" in response.content.decode()
        assert Proposal.objects.get(pk=mixed["postgres"].pk).state == ProposalState.ACCEPTED

    def test_htmx_filtering_pushes_the_short_address_and_shows_errors_in_place(self, signed_in, mixed):
        response = signed_in.get("/?action=create&agent=&kind=&q=&sort=disputes", **HX)
        assert response["HX-Push-Url"] == "/?action=create"
        bad = signed_in.get("/?action=nope", **HX)
        assert bad.status_code == 200 and "is not one of" in bad.content.decode()


# --------------------------------------------------------------------------- paging, all that match capped


def _many(agent, team_agent, make_record):
    """30 creates by claude-code, 5 by team-bot, 3 disputes by team-bot: more than a page (25)."""
    made = []
    for n in range(30):
        made.append(
            actions.propose_create(
                agent=agent, reason="Seen in the repository", **content(title=f"Fact {n}", body=f"{GOOD_BODY} {n}.")
            )
        )
    for n in range(5):
        made.append(
            actions.propose_create(
                agent=team_agent, reason="Seen in standup", **content(title=f"Team fact {n}", body=f"{GOOD_BODY} t{n}.")
            )
        )
    records = [make_record(title=f"Record {n}", body=f"{GOOD_BODY} r{n}.") for n in range(3)]
    disputes = [actions.dispute_record(r, agent=team_agent, reason="This changed last week") for r in records]
    return made, disputes


@pytest.fixture(scope="class")
def many_world(django_db_setup, django_db_blocker):
    """The people and ``_many``'s proposals, made once for the class that uses them."""

    def build():
        people = make_people()
        return people, _many(people.agent, people.team_agent, people.make_record)

    yield from shared(build, django_db_blocker)


def next_cursor(response) -> str:
    match = re.search(r'id="load-more" href="[^"]*after=(\d+)"', response.content.decode())
    return match.group(1) if match else ""


class TestThirtyEightProposals:
    """The tests over the 38 proposals of ``_many``, made once for the class
    (tests/shared_data.py); each test gets its own copies of them and of rita."""

    @pytest.fixture
    def reviewer(self, many_world, db):
        return fresh(many_world[0].reviewer)

    @pytest.fixture
    def many(self, many_world, db):
        return for_a_test(many_world[1])

    @pytest.mark.parametrize("sort", ["disputes", "oldest", "newest"])
    def test_paging_covers_every_match_once_in_each_sort(self, signed_in, many, sort):
        seen: list[int] = []
        response = signed_in.get(f"/?sort={sort}")
        seen += listed(response)
        while cursor := next_cursor(response):
            response = signed_in.get(f"/?sort={sort}&after={cursor}", **HX)
            seen += listed(response)
        assert len(seen) == len(set(seen)) == 38
        if sort == "disputes":
            assert set(seen[:3]) == {d.pk for d in many[1]}

    def test_deciding_does_not_shift_the_next_page_under_a_filter(self, signed_in, reviewer, many):
        first = signed_in.get("/?agent=claude-code")
        page1 = listed(first)
        assert len(page1) == 25
        cursor = next_cursor(first)
        assert "agent=claude-code" in re.search(r'id="load-more" href="([^"]*)"', first.content.decode()).group(1)
        for pk in page1[:10]:  # decide some of the first page meanwhile
            actions.accept_proposal(Proposal.objects.get(pk=pk), actor=reviewer)
        page2 = listed(signed_in.get(f"/?agent=claude-code&after={cursor}", **HX))
        assert len(page2) == 5 and not set(page2) & set(page1)
        assert all(Proposal.objects.get(pk=pk).agent.name == "claude-code" for pk in page2)

    def test_all_that_match_is_capped_and_says_so(self, signed_in, many, monkeypatch):
        from inbox import triage_views

        monkeypatch.setattr(triage_views, "BULK_MAX", 10)
        html = signed_in.get("/proposals/bulk-all?agent=claude-code&op=accept").content.decode()
        assert "Accept 10 proposals?" in html
        assert "30 match, more than 10 at once" in html
        assert len(confirmed_ids(signed_in.get("/proposals/bulk-all?agent=claude-code&op=accept"))) == 10


def test_choosing_a_view_refuses_an_unknown_value(signed_in):
    response = signed_in.post("/inbox/view", {"view": "grid", "next": "/"})
    assert response.status_code == 400 and "is not one of: cards, compact" in response.content.decode()
    assert "vetted_inbox_view" not in response.cookies


def test_setting_the_view_refuses_an_unknown_value():
    from reviews.errors import ValidationFailed

    with pytest.raises(ValidationFailed):
        actions.set_inbox_view(None, "grid")
