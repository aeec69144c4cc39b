"""The activity page and the strip above the inbox: the figures from the
database (per day by agent, acceptance rate, backlog and ages, what falls
due, time to decide), only of the viewer's spaces, each chart as SVG with a
table of the same numbers."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from inbox import activity, charts
from reviews import actions
from reviews.models import Proposal, Record
from tests.conftest import content

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, reviewer):
    client.force_login(reviewer)
    return client


def _create(agent, n, **extra):
    return actions.propose_create(
        agent=agent,
        reason="Noted during the review",
        **content(
            title=f"Fact number {n} for the chart", body=f"Fact {n} is true for the activity chart test.", **extra
        ),
    )


def test_the_figures_count_proposals_decisions_and_rates_per_agent(reviewer, agent, team_agent):
    mine = [_create(agent, n) for n in range(4)]
    theirs = [_create(team_agent, 10 + n) for n in range(2)]
    actions.accept_proposal(mine[0], actor=reviewer)
    actions.accept_proposal(mine[1], actor=reviewer)
    actions.reject_proposal(mine[2], actor=reviewer, note="Not needed")
    actions.reject_proposal(theirs[0], actor=reviewer, note="Not needed")
    found = activity.collect()
    today = len(found.days) - 1
    assert found.proposed[agent.name][today] == 4 and found.proposed[team_agent.name][today] == 2
    assert found.decided[agent.name][today] == 3 and found.decided[team_agent.name][today] == 1
    assert found.rate_counts[agent.name][-1] == (2, 3)
    assert found.rates[agent.name][-1] == pytest.approx(2 / 3) and found.rates[team_agent.name][-1] == 0.0
    assert found.pending == 2 and found.backlog[today] == 2
    assert sum(n for _, n in found.ages) == 2 and found.ages[0][1] == 2  # all under a day
    assert found.decided_total == 4 and sum(n for _, n in found.decide_times) == 4


def test_the_backlog_of_past_days_follows_arrivals_and_decisions(reviewer, agent):
    old = [_create(agent, n) for n in range(3)]
    three_days_ago = timezone.now() - timedelta(days=3)
    Proposal.objects.filter(pk__in=[p.pk for p in old]).update(created_at=three_days_ago)
    actions.accept_proposal(old[0], actor=reviewer)
    found = activity.collect()
    # Three arrived three days ago, one was decided today: three waited yesterday, two wait now.
    assert found.backlog[-1] == 2 and found.backlog[-2] == 3 and found.backlog[-5] == 0
    assert dict(found.ages)["3–7 days"] == 2


def test_what_falls_due_is_counted_by_week_and_overdue_apart(make_record):
    today = timezone.localdate()
    soon = make_record(title="Due soon", body="This record falls due for review in ten days.")
    later = make_record(title="Due later", body="This record falls due for review in fifty days.")
    late = make_record(title="Overdue one", body="This record was due for review two days ago.")
    Record.objects.filter(pk=soon.pk).update(review_by=today + timedelta(days=10))
    Record.objects.filter(pk=later.pk).update(review_by=today + timedelta(days=50))
    Record.objects.filter(pk=late.pk).update(review_by=today - timedelta(days=2))
    found = activity.collect()
    assert found.due[1] == 1 and found.due[7] == 1 and found.overdue == 1


def test_the_activity_page_draws_each_chart_with_a_table(signed_in, reviewer, agent):
    proposal = _create(agent, 1)
    actions.accept_proposal(proposal, actor=reviewer)
    _create(agent, 2)
    html = signed_in.get("/activity/").content.decode()
    for chart in ("proposed", "decided", "rates", "backlog", "ages", "due", "took"):
        assert f'id="chart-{chart}"' in html and f'aria-labelledby="chart-{chart}-title"' in html
    for table in ("per-day", "rates", "ages", "due", "took"):
        assert f'id="table-{table}"' in html
    assert "<script" not in html.split("</header>", 1)[1]  # charts need no script
    assert " style=" not in html and "onload" not in html  # nothing for the CSP to allow
    assert re.search(r"<rect class=\"chart-s0\"[^>]*><title>[^<]*claude-code 1</title>", html)


def test_the_page_needs_a_reviewer(client):
    assert client.get("/activity/").status_code == 302


def test_another_spaces_proposals_are_not_counted(client, second_reviewer, agent):
    """A reviewer of no space shared with the agent sees none of its work."""
    _create(agent, 1, space="personal")  # rita's personal space: sam does not review it
    client.force_login(second_reviewer)
    found_html = client.get("/activity/").content.decode()
    assert agent.name not in found_html


def test_the_strip_above_the_inbox_links_to_the_page(signed_in, agent):
    _create(agent, 1)
    html = signed_in.get("/").content.decode()
    strip = re.search(r'<section class="activity-strip".*?</section>', html, re.S)
    assert strip and 'href="/activity/"' in strip.group(0) and "<strong>1</strong> waiting" in strip.group(0)


def test_chart_text_is_escaped():
    svg = charts.bars("c", "<b>title</b>", ["<x>"], [1])
    assert "<b>" not in svg and "&lt;b&gt;" in svg and "&lt;x&gt;" in svg
