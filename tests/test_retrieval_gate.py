"""The query-time gate: only approved, current, unedited, in-space records
leave retrieval, whatever mode the ranking ran in.

Search goes through retrieval.search.search and single reads through
retrieval.gate.read_record. State changes go through reviews.actions;
out-of-band edits are simulated with raw SQL, overdue and expired records
with queryset updates of dates (dates are not part of the approved text).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from retrieval import search as search_module
from retrieval.gate import REASONS, Reader, read_record
from retrieval.search import MODES, Filters, search
from reviews import actions
from reviews.errors import NotFound
from reviews.models import Record
from tests.shared_search_data import OverSharedData, fresh, shared_data

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_search_state(monkeypatch):
    """Each test gets its own access counter (never auto-flushing mid-test)
    and its own document-frequency cache: both are process-wide, and record
    ids repeat between tests whose transactions were rolled back."""
    monkeypatch.setattr(search_module, "access_counter", search_module._AccessCounter(flush_every=3600))
    monkeypatch.setattr(search_module, "_docfreq", search_module._DocFreq())


def today() -> date:
    return timezone.localdate()


def ids(response) -> list[str]:
    return [hit.record.public_id for hit in response.results]


def find(query: str, *, reader: Reader | None = None, **kwargs):
    return search(query, reader=reader or Reader.everything(), **kwargs)


def make_overdue(record: Record) -> None:
    Record.objects.filter(pk=record.pk).update(review_by=today() - timedelta(days=1))


def raw_update(record: Record, column: str, value) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE reviews_record SET {column} = %s WHERE id = %s", [value, record.pk])


def as_json(response) -> str:
    return json.dumps(response.as_dict(), ensure_ascii=False)


def revise(record: Record, agent, reviewer, **changes) -> Record:
    proposal = actions.propose_revision(record, agent=agent, reason="The old text is out of date", **changes)
    result = actions.accept_proposal(proposal, actor=reviewer).result_record
    assert result is not None
    return result


# --------------------------------------------------------------------------- proposals are never served


@pytest.mark.parametrize("mode", MODES)
def test_a_pending_proposal_is_never_returned(agent, mode):
    proposal = actions.propose_create(
        agent=agent,
        reason="Seen in the wiki",
        kind="fact",
        space="team",
        title="Marmalade rota",
        body="The marmalade rota lists who restocks the kitchen shelves every Friday.",
        tags=["office"],
    )

    response = find("marmalade rota kitchen", mode=mode)

    assert response.results == []
    assert response.withheld == {}
    assert "marmalade" not in as_json(response).replace(response.query, "").lower()
    with pytest.raises(NotFound):
        read_record(proposal.public_id, Reader.everything())


@pytest.mark.parametrize("mode", MODES)
def test_a_rejected_proposal_is_never_returned(agent, reviewer, mode):
    proposal = actions.propose_create(
        agent=agent,
        reason="Seen in the wiki",
        kind="fact",
        space="team",
        title="Marmalade rota",
        body="The marmalade rota lists who restocks the kitchen shelves every Friday.",
        tags=["office"],
    )
    actions.reject_proposal(proposal, actor=reviewer, note="Not true any more")

    response = find("marmalade rota kitchen", mode=mode)

    assert response.results == []
    assert response.withheld == {}


@pytest.mark.parametrize("mode", MODES)
def test_a_pending_revision_does_not_replace_the_approved_text(make_record, agent, mode):
    record = make_record(
        title="Standup time", body="The daily standup starts at nine thirty in the small room.", tags=["meetings"]
    )
    actions.propose_revision(
        record, agent=agent, reason="It moved", body="The daily standup starts at ten fifteen in the aquarium room."
    )

    moved = find("ten fifteen aquarium", mode=mode)
    current = find("nine thirty small room", mode=mode)

    assert "aquarium" not in as_json(moved).replace(moved.query, "")
    assert ids(current)[:1] == [record.public_id]
    assert current.results[0].record.body.startswith("The daily standup starts at nine thirty")


# --------------------------------------------------------------------------- each withholding reason


def withheld_everywhere(query: str, reason: str, secret: str) -> None:
    """In every mode: nothing delivered, one record withheld for ``reason``,
    and ``secret`` (text only the withheld record holds) never in the output."""
    for mode in MODES:
        response = find(query, mode=mode)
        assert response.results == [], mode
        assert response.withheld == {reason: 1}, mode
        data = response.as_dict()
        assert data["withheld_total"] == 1
        assert secret.lower() not in as_json(response).replace(response.query, "").lower(), mode


def _parking(cast):
    return cast.make_record(
        title="Parking permit office", body="Parking permits are renewed at the office on floor two.", tags=["office"]
    )


@pytest.mark.xdist_group("retrieval_gate.TestReasonsOnOneRecord")
class TestReasonsOnOneRecord(OverSharedData):
    """Each withholding reason on the one parking record (approved in team),
    made once for the class: each test changes it in its own savepoint (a
    date, a raw edit, a dispute, a retirement)."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _parking) as cast:
            yield cast

    @pytest.fixture
    def parking(self, shared):
        return fresh(shared.data)

    def test_an_overdue_record_is_withheld_as_overdue(self, parking):
        record = parking
        assert ids(find("parking permits renewed")) == [record.public_id]

        make_overdue(record)

        withheld_everywhere("parking permits renewed", "overdue", "floor two")
        result = read_record(record.public_id, Reader.everything())
        assert result.record is None and result.withheld == "overdue"

    def test_a_record_due_today_is_still_delivered(self, parking):
        record = parking
        Record.objects.filter(pk=record.pk).update(review_by=today())

        assert ids(find("parking permits renewed")) == [record.public_id]

    @pytest.mark.parametrize(
        "column, value, query, secret",
        [
            (
                "body",
                "Parking permits are renewed by email to the facilities desk now.",
                "facilities desk email",
                "facilities",
            ),
            ("title", "Parking permit office moved to the annex", "annex moved", "annex"),
            ("tags", json.dumps(["office", "smuggled"]), "smuggled", "smuggled"),
        ],
    )
    def test_a_record_edited_out_of_band_is_withheld_as_edited_on_its_approved_text_only(
        self, parking, column, value, query, secret
    ):
        record = parking

        raw_update(record, column, value)

        # What was approved still matches, and is counted as withheld ...
        withheld_everywhere("parking permits renewed floor", "edited", secret)
        # ... but text nobody approved is not in the index: no mode finds it, and
        # not even the withheld count says that it holds these words.
        for mode in ("keyword", "hybrid"):
            response = find(query, mode=mode)
            assert response.results == [] and response.withheld == {}, mode
        result = read_record(record.public_id, Reader.everything())
        assert result.record is None and result.withheld == "edited"

    def test_a_record_with_an_unknown_status_is_withheld(self, parking):
        record = parking

        raw_update(record, "status", "pending")

        withheld_everywhere("parking permits renewed", "disputed", "floor two")

    def test_a_disputed_record_is_withheld_as_disputed(self, parking, agent):
        record = parking

        actions.dispute_record(record, agent=agent, reason="The office moved last month")

        withheld_everywhere("parking permits renewed", "disputed", "floor two")
        assert read_record(record.public_id, Reader.everything()).withheld == "disputed"

    def test_a_cleared_dispute_makes_the_record_deliverable_again(self, parking, agent, reviewer):
        record = parking
        actions.dispute_record(record, agent=agent, reason="The office moved last month")

        actions.clear_dispute(record, actor=reviewer, note="Checked: still there")

        assert ids(find("parking permits renewed")) == [record.public_id]

    def test_a_retired_record_is_withheld_as_retired(self, parking, reviewer):
        record = parking

        actions.retire_record(record, actor=reviewer, note="Parking is free now")

        withheld_everywhere("parking permits renewed", "retired", "floor two")
        assert read_record(record.public_id, Reader.everything()).withheld == "retired"


def test_reordering_tags_out_of_band_is_not_an_edit(make_record):
    record = make_record(
        title="Parking permit office",
        body="Parking permits are renewed at the office on floor two.",
        tags=["office", "parking"],
    )
    raw_update(record, "tags", json.dumps(["parking", "office"]))

    assert ids(find("parking permits renewed")) == [record.public_id]


def test_an_expired_record_is_withheld_as_expired(make_record):
    record = make_record(
        title="Parking permit office",
        body="Parking permits are renewed at the office on floor two.",
        tags=["office"],
        valid_until=today() + timedelta(days=30),
    )
    assert ids(find("parking permits renewed")) == [record.public_id]

    Record.objects.filter(pk=record.pk).update(valid_until=today() - timedelta(days=1))

    withheld_everywhere("parking permits renewed", "expired", "floor two")
    assert read_record(record.public_id, Reader.everything()).withheld == "expired"


def test_a_record_approved_with_a_past_valid_until_is_withheld_as_expired(make_record):
    make_record(
        title="Parking permit office",
        body="Parking permits are renewed at the office on floor two.",
        tags=["office"],
        valid_until=today() - timedelta(days=3),
    )

    withheld_everywhere("parking permits renewed", "expired", "floor two")


def test_a_record_valid_until_today_is_still_delivered(make_record):
    record = make_record(
        title="Parking permit office",
        body="Parking permits are renewed at the office on floor two.",
        tags=["office"],
        valid_until=today(),
    )

    assert ids(find("parking permits renewed")) == [record.public_id]


def test_a_record_not_yet_valid_is_not_delivered(make_record):
    make_record(
        title="Parking permit office",
        body="Parking permits are renewed at the office on floor two.",
        tags=["office"],
        valid_from=today() + timedelta(days=10),
    )

    response = find("parking permits renewed")

    assert response.results == []


@pytest.mark.parametrize("mode", MODES)
def test_a_superseded_record_is_withheld_and_its_successor_surfaced(make_record, agent, reviewer, mode):
    old = make_record(
        title="Wifi password location",
        body="The guest wifi password is written on the whiteboard beside reception.",
        tags=["office"],
    )
    new = revise(old, agent, reviewer, body="The guest wifi password is printed on the card at the front desk instead.")

    response = find("whiteboard beside reception", mode=mode)

    assert ids(response)[:1] == [new.public_id]
    hit = response.results[0]
    assert hit.successor_of == old.public_id
    assert response.withheld.get("superseded") == 1
    data = response.as_dict()
    assert data["results"][0]["supersedes"] == old.public_id
    assert "whiteboard" not in as_json(response).replace(response.query, "")


def test_a_superseded_record_is_not_surfaced_through_a_withheld_successor(make_record, agent, reviewer):
    old = make_record(
        title="Wifi password location",
        body="The guest wifi password is written on the whiteboard beside reception.",
        tags=["office"],
    )
    new = revise(old, agent, reviewer, body="The guest wifi password is printed on the card at the front desk instead.")
    make_overdue(new)

    response = find("whiteboard beside reception", mode="keyword")

    assert response.results == []
    assert response.withheld == {"superseded": 1}


def test_only_the_first_applicable_reason_is_counted(make_record, reviewer):
    retired = make_record(
        title="Parking permit office", body="Parking permits are renewed at the office on floor two.", tags=["office"]
    )
    edited = make_record(
        title="Parking garage height", body="Parking garage clearance is two metres at the ramp.", tags=["office"]
    )
    actions.retire_record(retired, actor=reviewer, note="Parking is free now")
    make_overdue(retired)
    raw_update(edited, "body", "Parking garage clearance is two metres ten at the ramp.")
    make_overdue(edited)

    response = find("parking", mode="keyword")

    assert response.withheld == {"retired": 1, "edited": 1}
    assert REASONS.index("retired") < REASONS.index("edited") < REASONS.index("overdue")


# --------------------------------------------------------------------------- spaces


def test_a_personal_record_is_invisible_to_a_team_reader_and_not_counted(make_record):
    personal = make_record(
        space="personal",
        title="My parking spot",
        body="My own parking spot is number forty two on level minus one.",
        tags=["me"],
    )
    overdue = make_record(
        space="personal",
        title="My parking card",
        body="My parking card expires in spring and must be renewed online.",
        tags=["me"],
    )
    make_overdue(overdue)

    for mode in MODES:
        everyone = find("parking", mode=mode)
        team = find("parking", mode=mode, reader=Reader.for_spaces(["team"]))
        assert personal.public_id in ids(everyone)
        assert everyone.withheld == {"overdue": 1}
        assert team.results == [], mode
        assert team.withheld == {}, mode
        assert "forty" not in as_json(team).lower()


def test_an_agent_reads_only_its_own_spaces(make_record, team_agent, agent):
    team = make_record(
        title="Team parking rules", body="Team members park on level two after eight in the morning.", tags=["office"]
    )
    personal = make_record(
        space="personal",
        title="My parking spot",
        body="My own parking spot is number forty two on level minus one.",
        tags=["me"],
    )

    assert set(ids(find("parking level", reader=Reader.for_agent(team_agent)))) == {team.public_id}
    assert set(ids(find("parking level", reader=Reader.for_agent(agent)))) == {team.public_id, personal.public_id}


# --------------------------------------------------------------------------- counts by reason


def test_withheld_counts_are_by_reason_and_never_carry_the_text(make_record, agent, reviewer):
    def parking(marker, **extra):
        return make_record(
            title=f"Parking note {marker}",
            tags=["office"],
            body=f"Parking permits and the {marker} arrangement for the car park.",
            **extra,
        )

    good = parking("sunflower")
    overdue = parking("alpaca")
    make_overdue(overdue)
    edited = parking("bramble")
    raw_update(edited, "body", "Parking permits and the bramble arrangement for the car park, edited.")
    disputed = parking("cobalt")
    actions.dispute_record(disputed, agent=agent, reason="This is wrong now")
    retired = parking("dolphin")
    actions.retire_record(retired, actor=reviewer, note="No longer true")
    expired = parking("ember", valid_until=today() + timedelta(days=5))
    Record.objects.filter(pk=expired.pk).update(valid_until=today() - timedelta(days=1))
    old = parking("fennel")
    successor = revise(
        old,
        agent,
        reviewer,
        title="Parking note juniper",
        body="Parking permits and the juniper arrangement for the car park.",
    )

    for mode in MODES:
        response = find("parking permits car park", mode=mode, limit=20)
        assert set(ids(response)) == {good.public_id, successor.public_id}, mode
        assert response.withheld == {
            "overdue": 1,
            "edited": 1,
            "disputed": 1,
            "retired": 1,
            "expired": 1,
            "superseded": 1,
        }, mode
        data = response.as_dict()
        assert data["withheld_total"] == 6
        text = as_json(response).lower()
        for marker in ("alpaca", "bramble", "cobalt", "dolphin", "ember", "fennel"):
            assert marker not in text, (mode, marker)
        for record in (overdue, edited, disputed, retired, expired, old):
            assert record.public_id not in [r["id"] for r in data["results"]]


# --------------------------------------------------------------------------- read_record


@pytest.mark.xdist_group("retrieval_gate.TestReadRecord")
class TestReadRecord(OverSharedData):
    """read_record over the conftest's default record (the billing API
    repository), made once for the class; what a test retires or revises
    rolls back with its savepoint."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, lambda cast: cast.make_record()) as cast:
            yield cast

    @pytest.fixture
    def record(self, shared):
        return fresh(shared.data)

    def test_read_record_returns_a_deliverable_record(self, record):
        result = read_record(record.public_id, Reader.everything())

        assert result.record == record
        assert result.withheld is None
        assert result.public_id == record.public_id

    def test_read_record_accepts_surrounding_whitespace(self, record):
        assert read_record(f"  {record.public_id}\n", Reader.everything()).record == record

    def test_read_record_of_a_withheld_record_gives_the_reason_not_the_text(self, record, reviewer):
        actions.retire_record(record, actor=reviewer, note="Moved to another repo")

        result = read_record(record.public_id, Reader.everything())

        assert result.record is None
        assert result.withheld == "retired"
        assert result.successor is None
        assert result.public_id == record.public_id

    def test_read_record_of_a_superseded_record_names_the_current_successor(self, record, agent, reviewer):
        second = revise(
            record, agent, reviewer, body="The billing API lives in acme/billing-api and deploys on Mondays."
        )
        third = revise(
            second, agent, reviewer, body="The billing API lives in acme/billing-api and deploys on Tuesdays."
        )

        first_read = read_record(record.public_id, Reader.everything())
        second_read = read_record(second.public_id, Reader.everything())

        assert first_read.record is None and first_read.withheld == "superseded"
        assert first_read.successor == third
        assert second_read.successor == third
        assert read_record(third.public_id, Reader.everything()).record == third

    def test_read_record_gives_no_successor_that_is_itself_withheld(self, record, agent, reviewer):
        second = revise(
            record, agent, reviewer, body="The billing API lives in acme/billing-api and deploys on Mondays."
        )
        actions.dispute_record(second, agent=agent, reason="Mondays is wrong too")

        result = read_record(record.public_id, Reader.everything())

        assert result.withheld == "superseded"
        assert result.successor is None

    @pytest.mark.parametrize(
        "hostile",
        [
            "../../../../etc/passwd",
            "rec_../../settings.py",
            "..\\..\\windows\\system32",
            "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            "rec_" + "a" * 10_000,
            "rec_\x00abc",
            "' OR 1=1 --",
            "",
            None,
        ],
    )
    def test_hostile_ids_raise_not_found(self, record, hostile):
        with pytest.raises(NotFound) as caught:
            read_record(hostile, Reader.everything())

        assert caught.value.message.startswith("No record with id")
        assert len(caught.value.message) < 80

    def test_an_id_with_a_real_record_id_as_prefix_is_not_found(self, record):
        with pytest.raises(NotFound):
            read_record(record.public_id + "/../x", Reader.everything())
        with pytest.raises(NotFound):
            read_record(record.public_id + "0" * 5000, Reader.everything())


def _shape(message: str, public_id: str) -> str:
    return message.replace(public_id, "<id>")


def test_unknown_and_out_of_space_ids_raise_the_same_not_found(make_record):
    personal = make_record(
        space="personal",
        title="My parking spot",
        body="My own parking spot is number forty two on level minus one.",
        tags=["me"],
    )
    unknown = "rec_0123456789ab"
    team_reader = Reader.for_spaces(["team"])

    with pytest.raises(NotFound) as out_of_space:
        read_record(personal.public_id, team_reader)
    with pytest.raises(NotFound) as missing:
        read_record(unknown, team_reader)

    assert _shape(out_of_space.value.message, personal.public_id) == _shape(missing.value.message, unknown)
    assert out_of_space.value.code == missing.value.code == "not_found"
    assert read_record(personal.public_id, Reader.everything()).record == personal


def test_an_out_of_space_withheld_record_is_not_found_not_withheld(make_record, reviewer):
    personal = make_record(
        space="personal",
        title="My parking spot",
        body="My own parking spot is number forty two on level minus one.",
        tags=["me"],
    )
    actions.retire_record(personal, actor=reviewer, note="Sold the car")

    with pytest.raises(NotFound):
        read_record(personal.public_id, Reader.for_spaces(["team"]))


# --------------------------------------------------------------------------- withholding never starves results


def _quokka_records(make_record, *, withheld: int, deliverable: int):
    """Records that all mention "quokka"; the withheld ones mention it far
    more (title and body), so every ranker puts them first."""
    bad, good = [], []
    for n in range(withheld):
        bad.append(
            make_record(
                title=f"Quokka quokka note {n}",
                tags=["quokka"],
                body=f"Quokka quokka quokka: the quokka census number {n} of the island.",
            )
        )
    for n in range(deliverable):
        good.append(
            make_record(
                title=f"Island ferry timetable {n}",
                tags=["ferry"],
                body=f"The island ferry {n} leaves at dawn; a quokka was seen on deck once.",
            )
        )
    return bad, good


def _starving(cast):
    bad, good = _quokka_records(cast.make_record, withheld=25, deliverable=5)
    for record in bad[:15]:
        make_overdue(record)
    for record in bad[15:]:
        actions.retire_record(record, actor=cast.reviewer, note="Census is over")
    return bad, good


@pytest.mark.xdist_group("retrieval_gate.TestWithheldFirst")
class TestWithheldFirst(OverSharedData):
    """25 withheld quokka records (15 overdue, 10 retired) ranked above 5
    deliverable ones, made once for the three modes (2.1-2.4 s a mode)."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _starving) as cast:
            yield cast

    @pytest.mark.parametrize("mode", MODES)
    def test_withheld_records_ranked_first_do_not_starve_the_results(self, shared, mode):
        _bad, good = shared.data

        response = find("quokka", mode=mode, limit=5)

        assert set(ids(response)) == {r.public_id for r in good}
        assert sum(response.withheld.values()) >= 1
        assert set(response.withheld) <= {"overdue", "retired"}


def _overflowing(cast):
    # limit 5 fetches 64 candidates first: 70 withheld ones fill that pool.
    bad, good = _quokka_records(cast.make_record, withheld=70, deliverable=5)
    Record.objects.filter(pk__in=[r.pk for r in bad]).update(review_by=today() - timedelta(days=2))
    return bad, good


@pytest.mark.xdist_group("retrieval_gate.TestCandidatePool")
class TestCandidatePool(OverSharedData):
    """70 overdue quokka records ahead of 5 deliverable ones, made once for
    the three modes (4.8-5.1 s a mode when each made its own)."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _overflowing) as cast:
            yield cast

    @pytest.mark.parametrize("mode", MODES)
    def test_the_candidate_pool_grows_past_the_first_fetch(self, shared, mode):
        _bad, good = shared.data

        response = find("quokka", mode=mode, limit=5)

        assert set(ids(response)) == {r.public_id for r in good}
        assert response.withheld["overdue"] >= 64


# --------------------------------------------------------------------------- filters


def _filter_records(cast):
    def approved_on(record, day):
        when = timezone.make_aware(datetime(day.year, day.month, day.day, 12, 0))
        Record.objects.filter(pk=record.pk).update(approved_at=when)
        return record

    fact = approved_on(
        cast.make_record(
            kind="fact",
            title="Heron pond fact",
            tags=["alpha", "beta"],
            confidence=0.9,
            body="A grey heron visits the office pond every morning at seven.",
        ),
        date(2024, 1, 10),
    )
    decision = approved_on(
        cast.make_record(
            kind="decision",
            space="personal",
            title="Heron photo decision",
            tags=["alpha"],
            confidence=0.5,
            body="I decided to photograph the heron only from the bridge.",
        ),
        date(2024, 3, 1),
    )
    proposal = actions.propose_create(
        agent=cast.team_agent,
        reason="From the handbook",
        kind="procedure",
        space="team",
        title="Heron feeding procedure",
        tags=["beta", "gamma"],
        body="Never feed the heron; report injured herons to the warden.",
    )
    procedure = approved_on(actions.accept_proposal(proposal, actor=cast.reviewer).result_record, date(2024, 6, 15))
    return {"fact": fact, "decision": decision, "procedure": procedure}


@pytest.mark.xdist_group("retrieval_gate.TestFilters")
class TestFilters(OverSharedData):
    """The filters over three heron records (a fact and a procedure in team,
    a decision in personal; claude-code proposed two, team-bot one), made
    once for the class: its 56 cases had made them again each."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _filter_records) as cast:
            yield cast

    @pytest.fixture
    def filter_records(self, shared):
        return fresh(shared.data)

    @pytest.mark.parametrize(
        "filters, expected",
        [
            pytest.param(Filters(kinds=["decision"]), {"decision"}, id="kinds-one"),
            pytest.param(Filters(kinds=["fact", "procedure"]), {"fact", "procedure"}, id="kinds-two"),
            pytest.param(Filters(spaces=["team"]), {"fact", "procedure"}, id="spaces-team"),
            pytest.param(Filters(spaces=["personal"]), {"decision"}, id="spaces-personal"),
            pytest.param(Filters(tags_any=["gamma"]), {"procedure"}, id="tags_any-one"),
            pytest.param(Filters(tags_any=["alpha", "gamma"]), {"fact", "decision", "procedure"}, id="tags_any-two"),
            pytest.param(Filters(tags_all=["alpha", "beta"]), {"fact"}, id="tags_all-two"),
            pytest.param(Filters(tags_all=["beta"]), {"fact", "procedure"}, id="tags_all-one"),
            pytest.param(Filters(agent="team-bot"), {"procedure"}, id="agent-team-bot"),
            pytest.param(Filters(agent="claude-code"), {"fact", "decision"}, id="agent-claude-code"),
            pytest.param(Filters(agent="nobody"), set(), id="agent-unknown"),
            pytest.param(Filters(min_confidence=0.6), {"fact"}, id="min_confidence-0.6"),
            pytest.param(Filters(min_confidence=0.5), {"fact", "decision"}, id="min_confidence-inclusive"),
            pytest.param(
                Filters(approved_after=date(2024, 3, 1)), {"decision", "procedure"}, id="approved_after-inclusive"
            ),
            pytest.param(
                Filters(approved_before=date(2024, 3, 1)), {"fact", "decision"}, id="approved_before-inclusive"
            ),
            pytest.param(
                Filters(approved_after=date(2024, 2, 1), approved_before=date(2024, 5, 1)),
                {"decision"},
                id="approved-range",
            ),
            pytest.param(Filters(kinds=["fact"], tags_any=["gamma"]), set(), id="combined-nothing"),
            pytest.param(Filters(), {"fact", "decision", "procedure"}, id="none"),
        ],
    )
    @pytest.mark.parametrize("mode", MODES)
    def test_filters_keep_only_matching_records(self, filter_records, filters, expected, mode):
        response = find("heron", mode=mode, filters=filters)

        assert set(ids(response)) == {filter_records[name].public_id for name in expected}
        assert response.withheld == {}

    def test_verified_date_filters_use_the_verification_date(self, filter_records):
        fact = filter_records["fact"]
        Record.objects.filter(pk=fact.pk).update(verified_at=timezone.make_aware(datetime(2025, 2, 2, 9, 0)))
        Record.objects.exclude(pk=fact.pk).update(verified_at=timezone.make_aware(datetime(2024, 12, 1, 9, 0)))

        after = find("heron", filters=Filters(verified_after=date(2025, 1, 1)))
        before = find("heron", filters=Filters(verified_before=date(2025, 1, 1)))

        assert ids(after) == [fact.public_id]
        assert fact.public_id not in ids(before) and len(before.results) == 2

    def test_filtered_out_records_are_not_counted_as_withheld(self, filter_records, make_record):
        event = make_record(
            kind="event",
            title="Heron nest event",
            tags=["delta"],
            body="The heron built a nest on the roof during the spring of last year.",
        )
        make_overdue(event)

        as_facts = find("heron", filters=Filters(kinds=["fact"]))
        as_events = find("heron", filters=Filters(kinds=["event"]))
        by_tag = find("heron", filters=Filters(tags_any=["alpha"]))

        assert as_facts.withheld == {} and by_tag.withheld == {}
        assert as_events.results == [] and as_events.withheld == {"overdue": 1}


def test_a_successor_that_fails_the_filters_is_not_surfaced(make_record, agent, reviewer):
    old = make_record(
        title="Wifi password location",
        tags=["office"],
        body="The guest wifi password is written on the whiteboard beside reception.",
    )
    revise(
        old,
        agent,
        reviewer,
        tags=["network"],
        body="The guest wifi password is printed on the card at the front desk instead.",
    )

    response = find("whiteboard beside reception", mode="keyword", filters=Filters(tags_any=["office"]))

    assert response.results == []
    assert response.withheld == {"superseded": 1}


# --------------------------------------------------------------------------- access counts


def access_row(record: Record):
    return Record.objects.values_list("access_count", "updated_at").get(pk=record.pk)


def test_delivered_records_get_their_access_count_bumped_on_flush(make_record):
    shown = make_record(
        title="Parking permit office", body="Parking permits are renewed at the office on floor two.", tags=["office"]
    )
    hidden = make_record(
        title="Parking garage height", body="Parking garage clearance is two metres at the ramp.", tags=["office"]
    )
    make_overdue(hidden)
    shown_before, hidden_before = access_row(shown), access_row(hidden)

    find("parking")
    find("parking permits", mode="keyword")
    search_module.access_counter.flush()

    assert access_row(shown) == (shown_before[0] + 2, shown_before[1])
    assert access_row(hidden) == hidden_before


@pytest.mark.xdist_group("retrieval_gate.TestAccessOnOneRecord")
class TestAccessOnOneRecord(OverSharedData):
    """Access counting on the one parking record, made once for the class;
    the counts a test flushes roll back with its savepoint."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _parking) as cast:
            yield cast

    @pytest.fixture
    def parking(self, shared):
        return fresh(shared.data)

    def test_access_counts_wait_for_the_flush(self, parking):
        shown = parking

        find("parking")

        assert access_row(shown)[0] == 0
        search_module.access_counter.flush()
        assert access_row(shown)[0] == 1

    def test_searches_that_do_not_count_access_leave_counts_alone(self, parking):
        shown = parking

        find("parking", count_access=False)
        search_module.access_counter.flush()

        assert access_row(shown)[0] == 0

    def test_counting_access_does_not_queue_the_record_for_reindexing(self, parking):
        shown = parking
        find("parking", mode="semantic")  # syncs the vector queue
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM retrieval_dirty")
            assert cursor.fetchone()[0] == 0

        find("parking", mode="keyword")
        search_module.access_counter.flush()

        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM retrieval_dirty")
            assert cursor.fetchone()[0] == 0
        assert access_row(shown)[0] == 2

    def test_response_reports_withheld_reasons_only_from_the_known_set(self, parking, reviewer):
        record = parking
        actions.retire_record(record, actor=reviewer, note="gone")

        data = find("parking").as_dict()

        assert set(data["withheld"]) <= set(REASONS)
        assert data["withheld"] == {"retired": 1}
        assert all(isinstance(n, int) for n in data["withheld"].values())


def test_a_surfaced_successor_is_counted_and_the_superseded_record_is_not(make_record, agent, reviewer):
    old = make_record(
        title="Wifi password location",
        tags=["office"],
        body="The guest wifi password is written on the whiteboard beside reception.",
    )
    new = revise(old, agent, reviewer, body="The guest wifi password is printed on the card at the front desk instead.")

    find("whiteboard beside reception", mode="keyword")
    search_module.access_counter.flush()

    assert access_row(new)[0] == 1
    assert access_row(old)[0] == 0
