"""Dates an agent gives (``since``, ``review_by``): every bad one is a clear
field error, never a crash, including those whose offset pushes them past
the range Python's datetime can hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_bridge import agent_api
from reviews import actions
from reviews.errors import ValidationFailed
from reviews.validation import MOMENT_MAX, MOMENT_MIN, clean_moment
from tests.conftest import examples

EXTREMES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]
MALFORMED = [
    "last tuesday",
    "2026-02-30",
    "2026-13-01",
    "2026-11-30T25:00",
    "2026-11-30T09:00+24:00",
    "0000-01-01",
    "10000-01-01",
    "1969-12-31",
    "9999-12-31",
    "2026-11-30T09:00:00Z" + "0" * 80,
    "\x00",
    " ",
]


@pytest.mark.parametrize("value", EXTREMES + MALFORMED)
def test_a_bad_moment_is_a_field_error_saying_what_is_allowed(value):
    with pytest.raises(ValidationFailed) as info:
        clean_moment("since", value)
    message = info.value.fields["since"]
    assert "a date (2026-11-30) or an ISO 8601 date-time" in message
    assert "between 1970-01-01 and 9999-12-30" in message


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T09:00:00Z", datetime(2026, 11, 30, 9, tzinfo=UTC)),
        ("2026-11-30T23:00:00-14:00", datetime(2026, 12, 1, 13, tzinfo=UTC)),
        ("9999-12-30", datetime(9999, 12, 30, tzinfo=UTC)),
        ("1970-01-01", datetime(1970, 1, 1, tzinfo=UTC)),
    ],
)
def test_good_moments_become_utc(value, expected):
    assert clean_moment("since", value) == expected


def test_nothing_is_no_moment():
    assert clean_moment("since", None) is None and clean_moment("since", "") is None


@settings(max_examples=examples(400), deadline=None)
@given(st.one_of(st.text(max_size=80), st.integers(), st.floats(), st.lists(st.text(max_size=5), max_size=3)))
def test_the_moment_parser_only_ever_returns_a_moment_in_range_or_a_field_error(value):
    try:
        moment = clean_moment("since", value)
    except ValidationFailed as exc:
        assert set(exc.fields) == {"since"}
    else:
        assert moment is None or MOMENT_MIN <= moment <= MOMENT_MAX


@settings(max_examples=examples(400), deadline=None)
@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1),
    st.sampled_from(["T", " "]),
)
def test_iso_date_times_with_any_offset_never_crash_the_parser(naive, offset_minutes, separator):
    text = naive.replace(tzinfo=timezone(timedelta(minutes=offset_minutes))).isoformat(sep=separator)
    try:
        moment = clean_moment("since", text)
    except ValidationFailed as exc:
        assert set(exc.fields) == {"since"}
    else:
        assert moment is not None and MOMENT_MIN <= moment <= MOMENT_MAX


# --------------------------------------------------------------------------- through the agent API


@pytest.mark.django_db
@pytest.mark.parametrize("since", EXTREMES)
def test_list_with_an_extreme_since_is_invalid_input_not_a_crash(agent, since):
    with pytest.raises(ValidationFailed) as info:
        agent_api.list_records(agent, since=since)
    assert "since" in info.value.fields


@pytest.mark.django_db
@pytest.mark.parametrize("since", EXTREMES + ["2026-02-30"])
def test_rest_answers_400_json_for_an_extreme_since(client, reviewer, since):
    _agent, token = actions.create_agent("dates-bot", spaces=["team"], actor=reviewer)
    response = client.get("/api/v1/records", {"since": since}, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400
    data = response.json()
    assert data["error"] == "invalid" and "between 1970-01-01 and 9999-12-30" in data["fields"]["since"]


@pytest.mark.django_db
def test_review_by_at_the_extremes_is_a_field_error(agent):
    for value in ("0001-01-01", "9999-12-31"):
        with pytest.raises(ValidationFailed) as info:
            agent_api.propose_context(
                agent,
                title="Billing API repository",
                kind="fact",
                space="team",
                body="The billing API lives in the acme/billing-api repository and deploys daily.",
                reason="Seen in the README",
                review_by=value,
            )
        assert "review_by" in info.value.fields


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
@pytest.mark.django_db
def test_list_never_crashes_on_any_since(agent, since):
    try:
        agent_api.list_records(agent, since=since)
    except ValidationFailed as exc:
        assert set(exc.fields) == {"since"}
