"""Write discipline at proposal time: clear errors that say what is allowed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews import actions
from reviews.errors import ValidationFailed
from reviews.models import Proposal
from reviews.validation import clean_tags, junk_reason
from tests.conftest import content

pytestmark = pytest.mark.django_db


def propose(agent, **overrides):
    return actions.propose_create(
        agent=agent, reason=overrides.pop("reason", "Seen in the README"), **content(**overrides)
    )


def field_error(agent, field, **overrides) -> str:
    with pytest.raises(ValidationFailed) as info:
        propose(agent, **overrides)
    assert Proposal.objects.count() == 0
    assert field in info.value.fields, info.value.fields
    return info.value.fields[field]


def test_kind_error_lists_allowed_kinds(agent):
    assert field_error(agent, "kind", kind="rumour") == (
        "got 'rumour'; allowed kinds: decision, event, fact, preference, procedure, reference"
    )


def test_extra_kinds_come_from_settings(agent, settings):
    settings.VETTED_KINDS = {**settings.VETTED_KINDS, "runbook": 90}
    proposal = propose(agent, kind="runbook")
    assert proposal.review_by == timezone.localdate() + timedelta(days=90)


def test_space_error_lists_allowed_spaces(agent):
    # Never every space there is (other people's personal spaces, other teams): see tests/test_agent_learns.py.
    refused = field_error(agent, "space", space="public")
    assert "not a space you may use" in refused and "system" not in refused


def test_body_length_limits(agent):
    assert "at least 20" in field_error(agent, "body", body="Too short here.")
    assert "at most 20000" in field_error(agent, "body", body="word " * 5000)


def test_title_limits(agent):
    assert "at most 200" in field_error(agent, "title", title="t" * 201)
    assert "single line" in field_error(agent, "title", title="two\nlines")
    assert "at least 3" in field_error(agent, "title", title=" a ")


@pytest.mark.parametrize(
    "junk",
    [
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "asdfgh qwrtzp sdfghjk zxcvbnm lkjhgfd",
        "test test test test test test test",
        "1234567890 1234567890 1234567890 !!!!",
        "!!!! ???? #### $$$$ %%%% ^^^^ &&&& ****",
    ],
)
def test_junk_bodies_are_refused(agent, junk):
    assert "does not look like real text" in field_error(agent, "body", body=junk)


@pytest.mark.parametrize(
    "text",
    [
        "Run `make test` before pushing; CI runs `.ci/run` on a fresh clone.",
        "Set STRIPE_WEBHOOK_SECRET in .env.local, never in settings.py.",
        "Use `kubectl -n prod rollout restart deploy/api` to restart the API pods.",
        "Rita prefers tabs in Go, two spaces in YAML, four in Python.",
        "Die Rechnungs-API läuft im Repository acme/billing-api auf dem Hauptzweig.",
    ],
)
def test_real_text_including_code_passes(text):
    assert junk_reason(text) is None


def test_control_characters_are_refused(agent):
    assert "control character U+0007 (<control>) at position 25" in field_error(
        agent, "body", body="Normal text with a bell \x07 inside it."
    )


def test_tags_are_normalised(agent):
    proposal = propose(agent, tags=["Billing", "billing", " API ", "#repos", "acme/billing-api", "release 21.0.3"])
    assert proposal.tags == ["acme/billing-api", "api", "billing", "release-21.0.3", "repos"]


def test_tag_limits(agent):
    assert "at most 20" in field_error(agent, "tags", tags=[f"t{i}" for i in range(21)])
    assert "not allowed" in field_error(agent, "tags", tags=["<script>"])
    assert "longer than 50" in field_error(agent, "tags", tags=["x" * 51])
    assert "at most 20" in field_error(agent, "tags", tags=[f"t{i}" for i in range(10_000)])
    assert "must be a list" in field_error(agent, "tags", tags={"a": 1})


def test_tags_accept_a_comma_separated_string():
    assert clean_tags("deploy, ops  infra") == ["deploy", "infra", "ops"]


def test_review_by_must_be_a_future_date(agent):
    assert "YYYY-MM-DD" in field_error(agent, "review_by", review_by="next week")
    assert "not in the future" in field_error(agent, "review_by", review_by=timezone.localdate().isoformat())
    assert "3650 days" in field_error(agent, "review_by", review_by="2999-01-01")


def test_validity_window_must_be_ordered(agent):
    assert "before valid_from" in field_error(agent, "valid_until", valid_from="2026-05-01", valid_until="2026-04-01")


def test_confidence_and_metadata(agent):
    assert "outside 0..1" in field_error(agent, "confidence", confidence=1.5)
    assert "JSON object" in field_error(agent, "metadata", metadata=["a"])
    assert "8192 bytes" in field_error(agent, "metadata", metadata={"blob": "x" * 9000})


def test_reason_is_required(agent):
    with pytest.raises(ValidationFailed) as info:
        propose(agent, reason="")
    assert "reason" in info.value.fields


def test_unknown_fields_are_refused_by_name(agent):
    with pytest.raises(ValidationFailed) as info:
        actions.propose_create(agent=agent, reason="Seen it", titel="Typo", **content())
    assert "titel" in info.value.fields


def test_all_problems_are_reported_at_once(agent):
    with pytest.raises(ValidationFailed) as info:
        propose(agent, kind="x", space="y", title="", body="")
    assert set(info.value.fields) >= {"kind", "space", "title", "body"}


def test_body_whitespace_is_normalised(agent):
    proposal = propose(agent, body="  Line one of the note here.   \r\nLine two of the note.  \n\n")
    assert proposal.body == "Line one of the note here.\nLine two of the note."
