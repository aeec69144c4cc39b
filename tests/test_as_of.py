"""as_of and valid_at (issue 18 §2): what an agent would have received at a
past moment, and records whose validity window holds a given day.

A history is built on a controlled clock (time-machine moves the whole
process's clock, so AuditEvent.at, approved_at and the outbox rows follow
it): create, revise, dispute, keep the record (clear the dispute), retire,
edit outside Vetted, a review date passing. Each moment is then checked on
search (every mode), read and list, through the agent API, REST and the
retrieval command; tests/test_as_of_gateway.py does MCP over HTTP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from mcp_bridge import agent_api
from retrieval import search as search_module
from retrieval.gate import Reader
from retrieval.search import MODES, search
from reviews import actions, history
from reviews.errors import NotFound, ValidationFailed
from reviews.models import AuditEvent, Record
from tests.shared_search_data import OverSharedData, fresh, shared_data

pytestmark = pytest.mark.django_db

QUERY = "billing deploy window"
OLD_BODY = "Billing deploys run on Tuesdays after the ten o'clock window closes."
NEW_BODY = "Billing deploys run on Thursdays after the two o'clock window closes."
HOST_BODY = "The billing staging database host is db-stage-3 in the eu-west region."
EDITED_BODY = "The billing staging database host is attacker.example in nobody's region."


def at(day: int, hour: int = 12, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


@dataclass
class History:
    v1: Record  # the deploy window, first version (revised on day 5)
    v2: Record  # its revision: disputed day 8, kept day 10, retired day 15
    host: Record  # edited outside Vetted on day 12
    due: Record  # review date 2026-03-20
    summer: Record  # valid 2026-06-01 .. 2026-08-31


@pytest.fixture(autouse=True)
def fresh_search_state(monkeypatch):
    monkeypatch.setattr(search_module, "access_counter", search_module._AccessCounter(flush_every=3600))
    monkeypatch.setattr(search_module, "_docfreq", search_module._DocFreq())


def build_history(reviewer, agent) -> History:
    """The history every test here looks back on (all in March 2026; the tests then run at today's real date)."""

    def create(**fields):
        proposal = actions.propose_create(
            agent=agent, reason="Seen in the runbook", kind="fact", space="team", **fields
        )
        return actions.accept_proposal(proposal, actor=reviewer).result_record

    with time_machine.travel(at(2), tick=False) as clock:
        v1 = create(title="Billing deploy window", body=OLD_BODY, tags=["billing"])
        host = create(title="Billing staging database", body=HOST_BODY, tags=["billing"])
        due = create(
            title="Billing deploy checklist",
            body="Billing deploy checks: tests, changelog, window.",
            tags=["billing"],
            review_by=date(2026, 3, 20),
        )
        summer = create(
            title="Billing summer deploy window",
            body="In summer billing deploys wait for the window.",
            tags=["billing"],
            valid_from=date(2026, 6, 1),
            valid_until=date(2026, 8, 31),
        )
        clock.move_to(at(5))
        v2 = actions.revise_record(v1, actor=reviewer, changes={"body": NEW_BODY}, note="moved to Thursdays")
        clock.move_to(at(8))
        actions.dispute_record(v2, agent=agent, reason="The window moved again last week.")
        clock.move_to(at(10))
        actions.clear_dispute(v2, actor=reviewer, note="Still Thursdays, checked with the team")
        clock.move_to(at(11, 18))
        actions.verify_record(host, actor=reviewer)  # Vetted's last proof that the host text was intact
        clock.move_to(at(12, 9))
        with connection.cursor() as cursor:  # outside Vetted: nothing but the row changes
            cursor.execute("UPDATE reviews_record SET body = %s WHERE id = %s", [EDITED_BODY, host.pk])
        clock.move_to(at(12, 10))
        search(QUERY, reader=Reader.everything(), mode="keyword")  # the index sync sees the change
        clock.move_to(at(15))
        actions.retire_record(v2, actor=reviewer, note="Deploys are continuous now")
    return History(*(Record.objects.get(pk=r.pk) for r in (v1, v2, host, due, summer)))


def found(moment: datetime | None, mode: str = "keyword", valid_on: date | None = None, query: str = QUERY):
    return search(
        query, mode=mode, reader=Reader.for_spaces(["team"]), moment=history.Moment(moment, valid_on), limit=20
    )


def bodies(response) -> dict[str, str]:
    return {hit.record.public_id: hit.record.body for hit in response.results}


# --------------------------------------------------------------------------- the one history, at each moment


@pytest.mark.xdist_group("as_of.TestLookingBack")
class TestLookingBack(OverSharedData):
    """Every test that looks back on the one history (``past``), made once
    for the class (215 ms of each test's setup before); what a test adds
    (an agent, a record, a proposal) rolls back with its savepoint."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(
            django_db_blocker, lambda cast: build_history(cast.reviewer, cast.agent), team_agent=False
        ) as cast:
            yield cast

    @pytest.fixture
    def past(self, shared) -> History:
        return History(*fresh([shared.data.v1, shared.data.v2, shared.data.host, shared.data.due, shared.data.summer]))

    @pytest.mark.parametrize("mode", MODES)
    def test_before_the_revision_search_gives_the_first_version_and_not_the_later_text(self, past, mode):
        response = found(at(3), mode)
        got = bodies(response)
        assert got[past.v1.public_id] == OLD_BODY
        assert past.v2.public_id not in got  # not approved yet: neither shown nor counted
        assert response.withheld == {"not_yet_valid": 1}  # the summer window; nothing of the later versions

    @pytest.mark.parametrize("mode", MODES)
    def test_after_the_revision_the_new_version_stands_in_for_the_old_one(self, past, mode):
        response = found(at(6), mode)
        got = bodies(response)
        assert got[past.v2.public_id] == NEW_BODY
        assert past.v1.public_id not in got
        assert response.withheld.get("superseded") == 1

    @pytest.mark.parametrize("mode", MODES)
    def test_while_disputed_neither_version_is_delivered(self, past, mode):
        response = found(at(9), mode)
        assert not {past.v1.public_id, past.v2.public_id} & set(bodies(response))
        assert response.withheld.get("disputed") == 1

    def test_once_the_dispute_is_cleared_the_revision_is_delivered_again(self, past):
        assert bodies(found(at(11)))[past.v2.public_id] == NEW_BODY

    def test_after_retirement_the_chain_is_withheld_and_counted(self, past):
        response = found(at(16))
        assert not {past.v1.public_id, past.v2.public_id} & set(bodies(response))
        assert response.withheld.get("retired") == 1

    def test_a_record_edited_outside_after_the_moment_shows_its_approved_text(self, past):
        assert bodies(found(at(11)))[past.host.public_id] == HOST_BODY  # proved intact at 18:00 that day

    def test_between_the_last_proof_and_the_sighting_an_outside_edit_counts_as_made(self, past):
        response = found(at(12, 8))  # the edit came at 9:00, but Vetted cannot know that: fail closed
        assert past.host.public_id not in bodies(response) and response.withheld.get("edited") == 1

    def test_a_record_edited_outside_before_the_moment_is_withheld_as_it_was(self, past):
        response = found(at(13))
        assert past.host.public_id not in bodies(response)
        assert response.withheld.get("edited") == 1
        assert "attacker" not in json.dumps(response.as_dict())

    def test_the_edited_text_never_leaves_at_any_moment(self, past):
        for day in range(2, 28):
            for mode in MODES:
                assert "attacker" not in json.dumps(found(at(day), mode).as_dict())

    def test_a_review_date_passing_withholds_the_record_from_that_day(self, past):
        assert past.due.public_id in bodies(found(at(20)))
        response = found(at(21))
        assert past.due.public_id not in bodies(response)
        assert response.withheld.get("overdue") == 1

    def test_other_spaces_are_not_searched_or_counted_at_a_moment(self, past):
        response = search(QUERY, mode="keyword", reader=Reader.for_spaces(["personal"]), moment=history.Moment(at(9)))
        assert response.results == [] and response.withheld == {}

    def test_valid_at_gives_records_whose_window_holds_that_day(self, past):
        assert past.summer.public_id not in bodies(found(at(11)))
        assert past.summer.public_id in bodies(found(at(11), valid_on=date(2026, 7, 1)))
        assert past.summer.public_id not in bodies(found(at(11), valid_on=date(2026, 9, 1)))

    def test_valid_at_alone_judges_todays_records_on_that_day(self, past):
        response = found(None, valid_on=date(2026, 7, 1))
        # Today (after the history) every record but the summer one is withheld or overdue; the summer one
        # is overdue too (March approval, default review period), so the window is judged but the rest still holds.
        assert past.v2.public_id not in bodies(response)
        assert "attacker" not in json.dumps(response.as_dict())

    def test_read_as_of_each_moment(self, past, agent):
        v1, v2 = past.v1.public_id, past.v2.public_id
        assert agent_api.read(agent, v1, as_of="2026-03-03")["record"]["body"] == OLD_BODY
        old = agent_api.read(agent, v1, as_of="2026-03-06")
        assert old["deliverable"] is False and old["withheld"] == "superseded" and old["current_version"] == v2
        assert agent_api.read(agent, v2, as_of="2026-03-09")["withheld"] == "disputed"
        assert agent_api.read(agent, v2, as_of="2026-03-11")["record"]["status"] == "approved"
        assert agent_api.read(agent, v2, as_of="2026-03-16")["withheld"] == "retired"
        assert agent_api.read(agent, past.host.public_id, as_of="2026-03-11T12:00:00Z")["record"]["body"] == HOST_BODY
        assert agent_api.read(agent, past.host.public_id, as_of="2026-03-13")["withheld"] == "edited"

    def test_read_of_a_record_not_yet_approved_then_is_not_found_like_an_unknown_id(self, past, agent):
        with pytest.raises(NotFound) as early:
            agent_api.read(agent, past.v2.public_id, as_of="2026-03-03")
        with pytest.raises(NotFound) as unknown:
            agent_api.read(agent, "rec_000000000000", as_of="2026-03-03")
        assert early.value.message.replace(past.v2.public_id, "X") == unknown.value.message.replace(
            "rec_000000000000", "X"
        )

    def test_list_as_of_each_moment(self, past, agent):
        def listed(as_of, **kw):
            return {r["id"]: r["excerpt"] for r in agent_api.list_records(agent, as_of=as_of, **kw)["records"]}

        assert set(listed("2026-03-03")) == {past.v1.public_id, past.host.public_id, past.due.public_id}
        assert set(listed("2026-03-06")) == {past.v2.public_id, past.host.public_id, past.due.public_id}
        assert past.v2.public_id not in listed("2026-03-09")
        assert listed("2026-03-11T12:00:00Z")[past.host.public_id] == HOST_BODY
        assert past.host.public_id not in listed("2026-03-11")  # the end of that day: after the last proof
        assert set(listed("2026-03-13")) == {past.v2.public_id, past.due.public_id}
        assert set(listed("2026-03-16")) == {past.due.public_id}
        assert listed("2026-03-22") == {}
        assert set(listed("2026-03-11", valid_at="2026-07-01")) >= {past.summer.public_id}

    @pytest.mark.parametrize(
        ("field", "value", "says"),
        [
            ("as_of", "last tuesday", "a date (2026-11-30)"),
            ("as_of", "2999-01-01", "in the future"),
            ("as_of", "9999-12-31", "a date (2026-11-30)"),
            ("as_of", "2999-01-01T00:00:00Z", "in the future"),
            ("as_of", "2020-01-01", "before this instance's first write"),
            ("valid_at", "soon", "YYYY-MM-DD"),
            ("valid_at", "2026-03-01T10:00:00Z", "YYYY-MM-DD"),
        ],
    )
    def test_bad_moments_are_refused_naming_what_is_allowed(self, past, agent, field, value, says):
        for call in (
            lambda: agent_api.search(agent, QUERY, **{field: value}),
            lambda: agent_api.read(agent, past.v1.public_id, **{field: value}),
            lambda: agent_api.list_records(agent, **{field: value}),
        ):
            with pytest.raises(ValidationFailed) as refused:
                call()
            assert says in refused.value.fields[field]

    def test_rest_takes_as_of_and_valid_at_on_search_list_and_read(self, past, reviewer, client):
        agent, token = actions.create_agent("rest-reader", spaces=["team"], actor=reviewer)
        auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        got = client.get("/api/v1/search", {"q": QUERY, "mode": "keyword", "as_of": "2026-03-03"}, **auth).json()
        assert got["as_of"].startswith("2026-03-03") and got["results"][0]["body"] == OLD_BODY
        listed = client.get("/api/v1/records", {"as_of": "2026-03-16"}, **auth).json()
        assert [r["id"] for r in listed["records"]] == [past.due.public_id]
        read = client.get(f"/api/v1/records/{past.v2.public_id}", {"as_of": "2026-03-09"}, **auth).json()
        assert read["withheld"] == "disputed"
        bad = client.get("/api/v1/records", {"valid_at": "someday"}, **auth)
        assert bad.status_code == 400 and "valid_at" in json.dumps(bad.json())

    def test_the_search_command_takes_as_of_and_valid_at(self, past):
        out = StringIO()
        call_command("search", QUERY, "--mode", "keyword", "--as-of", "2026-03-03", "--json", stdout=out)
        data = json.loads(out.getvalue())
        assert data["results"][0]["body"] == OLD_BODY
        out = StringIO()
        call_command(
            "search", QUERY, "--mode", "keyword", "--as-of", "2026-03-11", "--valid-at", "2026-07-01", stdout=out
        )
        assert past.summer.public_id in out.getvalue()

    def test_the_as_seen_page_lists_what_the_agent_received_on_that_date(self, past, reviewer, agent, client):
        client.force_login(reviewer)
        page = client.get("/records/as-seen/", {"as_of": "2026-03-03", "agent": agent.name}).content.decode()
        assert f'id="as-of-{past.v1.public_id}"' in page and "Tuesdays" in page
        assert past.v2.public_id not in page and "Thursdays" not in page
        later = client.get("/records/as-seen/", {"as_of": "2026-03-13", "agent": agent.name}).content.decode()
        assert "Thursdays" in later and past.host.public_id not in later and "attacker" not in later

    def test_the_as_seen_page_searches_for_a_set_of_spaces_and_counts_what_was_withheld(self, past, reviewer, client):
        client.force_login(reviewer)
        page = client.get(
            "/records/as-seen/", {"as_of": "2026-03-09", "spaces": "team", "q": QUERY, "mode": "keyword"}
        ).content.decode()
        assert 'id="as-of-withheld"' in page and "disputed 1" in page
        assert past.v2.public_id not in page.split('id="as-of-withheld"')[0].split('id="as-of-heading"')[1]
        personal = client.get("/records/as-seen/", {"as_of": "2026-03-09", "spaces": "personal"}).content.decode()
        assert "Nothing was deliverable then." in personal

    def test_the_as_seen_page_says_what_was_wrong_with_its_input(self, past, reviewer, client):
        client.force_login(reviewer)
        refused = client.get("/records/as-seen/", {"as_of": "2999-01-01", "agent": "nobody"})
        assert refused.status_code == 400
        text = refused.content.decode()
        assert "in the future" in text and "no agent named" in text

    def test_looking_from_now_agrees_with_the_live_gate_for_every_record(self, past):
        rows = list(Record.objects.all())
        now = history.at_moment(rows, history.Moment(timezone.now()))
        for record in rows:
            assert now[record.pk].reason == record.withhold_reason(), record.title

    def test_a_date_means_the_end_of_that_day_and_today_means_now(self, past):
        assert history.clean_as_of("2026-03-11") == history.end_of(date(2026, 3, 11))
        assert history.clean_as_of("2026-03-11T09:30:00Z") == datetime(2026, 3, 11, 9, 30, tzinfo=UTC)
        today = history.clean_as_of(timezone.localdate().isoformat())
        assert today is not None and today <= timezone.now()

    def test_the_records_command_lists_and_reads_as_of(self, past):
        out = StringIO()
        call_command("records", "list", "--space", "team", "--as-of", "2026-03-06", "--json", stdout=out)
        assert {r["id"] for r in json.loads(out.getvalue())["records"]} == {
            past.v2.public_id,
            past.host.public_id,
            past.due.public_id,
        }
        out = StringIO()
        call_command("records", "read", past.v1.public_id, "--as-of", "2026-03-03", "--json", stdout=out)
        assert json.loads(out.getvalue())["record"]["body"] == OLD_BODY
        out = StringIO()
        call_command("records", "read", past.v1.public_id, "--as-of", "2026-03-06", stdout=out)
        assert f"withheld (superseded); read {past.v2.public_id} instead" in out.getvalue()
        with pytest.raises(CommandError, match="--as-of: got '2999-01-01', which is in the future"):
            call_command("records", "list", "--as-of", "2999-01-01")

    def test_read_and_list_never_give_the_edited_text_at_any_moment(self, past, agent):
        for day in range(2, 28):
            moment = at(day).isoformat()
            assert "attacker" not in json.dumps(agent_api.read(agent, past.host.public_id, as_of=moment))
            assert "attacker" not in json.dumps(agent_api.list_records(agent, as_of=moment, limit=100))

    @pytest.mark.parametrize("mode", MODES)
    def test_what_a_reader_got_then_does_not_depend_on_other_spaces_or_pending_proposals(
        self, past, reviewer, agent, mode
    ):
        before = {day: found(at(day), mode).as_dict() for day in (3, 6, 9, 13)}
        with time_machine.travel(at(2, 13), tick=False):
            other = actions.propose_create(
                agent=agent,
                reason="diary",
                kind="fact",
                space="personal",
                title="Billing deploy window at home",
                body=OLD_BODY + " Personal.",
            )
            actions.accept_proposal(other, actor=reviewer)
            actions.propose_create(
                agent=agent,
                reason="guess",
                kind="fact",
                space="team",
                title="Billing deploy window rumour",
                body=NEW_BODY + " Pending.",
            )
        for day, response in before.items():
            assert found(at(day), mode).as_dict() == response, day


# --------------------------------------------------------------------------- no history, or a history of its own


def test_as_of_on_an_instance_with_no_history_says_so(db):
    with pytest.raises(ValidationFailed) as refused:
        history.clean_as_of("2026-01-01")
    assert "no history yet" in refused.value.fields["as_of"]


def test_undoing_a_revision_brings_the_first_version_back_from_that_moment(reviewer, agent):
    with time_machine.travel(at(2), tick=False) as clock:
        proposal = actions.propose_create(agent=agent, reason="runbook", kind="fact", space="team",
                                          title="Billing deploy window", body=OLD_BODY)  # fmt: skip
        v1 = actions.accept_proposal(proposal, actor=reviewer).result_record
        clock.move_to(at(2, 13))
        v2 = actions.revise_record(v1, actor=reviewer, changes={"body": NEW_BODY})
        clock.move_to(at(2, 13, 1))
        event = AuditEvent.objects.filter(event_type="record.revised", record_ref=v2.public_id).get()
        actions.undo_decision(event.pk, actor=reviewer)
    assert bodies(found(at(2, 12, 30))) == {v1.public_id: OLD_BODY}
    assert bodies(found(at(2, 13))) == {v2.public_id: NEW_BODY}
    assert bodies(found(at(2, 13, 2))) == {v1.public_id: OLD_BODY}


def test_a_verify_moves_the_review_date_from_its_moment_only(reviewer, agent):
    with time_machine.travel(at(2), tick=False) as clock:
        proposal = actions.propose_create(agent=agent, reason="runbook", kind="fact", space="team",
                                          title="Billing deploy window", body=OLD_BODY,
                                          review_by=date(2026, 3, 10))  # fmt: skip
        record = actions.accept_proposal(proposal, actor=reviewer).result_record
        clock.move_to(at(14))
        actions.verify_record(record, actor=reviewer, review_by=date(2026, 4, 30))
    assert found(at(12)).withheld == {"overdue": 1}
    assert bodies(found(at(15))) == {record.public_id: OLD_BODY}


def test_an_outside_edit_nobody_has_seen_counts_from_the_last_proof_the_text_was_intact(reviewer, agent):
    with time_machine.travel(at(2), tick=False) as clock:
        proposal = actions.propose_create(agent=agent, reason="runbook", kind="fact", space="team",
                                          title="Billing deploy window", body=OLD_BODY)  # fmt: skip
        record = actions.accept_proposal(proposal, actor=reviewer).result_record
        clock.move_to(at(6))
        actions.verify_record(record, actor=reviewer)
        clock.move_to(at(20))
        with connection.cursor() as cursor:  # no search since: Vetted has not seen it
            cursor.execute("UPDATE reviews_record SET body = %s WHERE id = %s", [EDITED_BODY, record.pk])
    assert bodies(found(at(5))) == {record.public_id: OLD_BODY}  # before the verify proved it intact
    response = found(at(7))  # after it: the edit may already have happened
    assert response.results == [] and response.withheld == {"edited": 1}
    # Seeing the edit now (this search's index sync did) changes nothing about the past.
    assert bodies(found(at(5))) == {record.public_id: OLD_BODY} and found(at(7)).withheld == {"edited": 1}
