"""What an agent may learn from a refusal, a character it sends, or the
cost of its queries: an unknown space names only the caller's own spaces;
characters that render blank are refused or read as a space, from one
list; a query's work is bounded and a long one weighs more in the read limit."""

from __future__ import annotations

import pytest

from common import textsafety
from mcp_bridge import agent_api
from reviews import actions, confusables
from reviews import validation as v
from reviews.errors import RateLimited, ValidationFailed
from tests.mcp_client import NEW_FACT as FACT

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_person(django_user_model):
    """bob: a person with a personal space and a team the agents' owner is not in."""
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "a-long-password-3", is_staff=True)
    actions.create_space("personal:bob", kind="personal", name="Bob", actor=actions.SystemActor("tests"), owner=bob)
    actions.create_space("skunkworks", kind="team", name="Skunkworks", actor=actions.SystemActor("tests"), owner=bob)
    return bob


@pytest.mark.parametrize("space", ["personal:bob", "skunkworks", "no-such-space"])
def test_an_unknown_or_foreign_space_names_only_the_agents_own_spaces(team_agent, other_person, space):
    with pytest.raises(ValidationFailed) as refused:
        agent_api.propose_context(team_agent, **{**FACT, "space": space})
    message = refused.value.fields["space"]
    assert message == f"got {space!r}; your spaces: team"
    for hidden in ("personal:bob", "skunkworks", "system", "personal,"):
        assert hidden not in message.replace(repr(space), "")


def test_a_search_filter_on_a_foreign_space_reads_like_an_unknown_one(team_agent, other_person):
    answers = []
    for space in ("skunkworks", "no-such-space"):
        with pytest.raises(ValidationFailed) as refused:
            agent_api.search(team_agent, "deploy", space=space)
        answers.append(refused.value.fields["space"].replace(repr(space), "X"))
    assert answers[0] == answers[1] == "got X; your spaces: team"


def test_the_space_rule_lists_no_space_without_knowing_the_callers(other_person):
    with pytest.raises(ValidationFailed) as refused:
        v.clean_space("nope")
    message = refused.value.fields["space"]
    assert "personal" not in message and "skunkworks" not in message and "team" not in message


# --------------------------------------------------------------------------- blank characters


def test_braille_pattern_blank_is_refused_like_an_invisible_character(agent):
    with pytest.raises(ValidationFailed) as refused:
        agent_api.propose_context(agent, **{**FACT, "title": "Payments\u2800service deploy window"})
    assert "U+2800 (BRAILLE PATTERN BLANK)" in refused.value.fields["title"]


def test_braille_text_keeps_its_blank_cells():
    assert textsafety.scan("\u2803\u2801\u2800\u2807")[1] == 0


@pytest.mark.parametrize("ch", sorted(textsafety.BLANKS))
def test_every_blank_character_reads_as_a_space_in_the_look_alike_key(ch):
    assert confusables.fold(f"Billing{ch}API") == confusables.fold("Billing API")
    assert confusables.title_key(f"Deploy{ch}window") == confusables.title_key("Deploy window")


@pytest.mark.parametrize("ch", sorted(textsafety.BLANKS))
def test_every_blank_character_is_warned_of_in_a_title(ch):
    assert any(textsafety.describe(ch) in w for w in confusables.mixed_script_warnings(f"Deploy{ch}window"))


def test_each_blank_character_is_decided_and_the_refused_ones_are_marked_on_pages():
    for ch, (decision, why) in textsafety.BLANKS.items():
        assert decision in ("space", "refused") and why
        page = textsafety.mark_invisible_html(f"<p>Deploy{ch}window</p>")
        assert (textsafety.marker(ch) in page) == (decision == "refused"), textsafety.describe(ch)
        assert textsafety.has_invisible(f"Deploy{ch}window") == (decision == "refused")


@pytest.mark.parametrize("ch", textsafety.IGNORABLE_BLANKS)
def test_the_ignorable_blank_fillers_stay_refused(ch):
    assert textsafety.has_invisible(f"Deploy{ch}window")
    assert "<span" in textsafety.mark_invisible_html(f"<p>Deploy{ch}window</p>")


def test_a_braille_blank_copy_of_a_title_is_a_look_alike_duplicate(make_record, reviewer):
    record = make_record(title="Billing API repository")
    assert confusables.title_key("Billing\u2800API\u2800repository") == confusables.title_key(record.title)


# --------------------------------------------------------------------------- a query's work


def test_a_query_too_long_or_with_too_many_words_is_refused_saying_the_limits(team_agent):
    for query in ("deploy " * 70, "x" * 1001):
        with pytest.raises(ValidationFailed) as refused:
            agent_api.search(team_agent, query)
        message = refused.value.fields["query"]
        assert "at most 1,000 characters and 64 words" in message


LONG = "how do we deploy the " + "billing-payments-reconciliation-service " * 22  # 901 characters, 26 words


def test_a_long_query_weighs_more_in_the_read_limit(team_agent, settings):
    settings.VETTED_READS_PER_MINUTE = 10
    agent_api.read_limiter.reset()
    try:
        agent_api.search(team_agent, LONG)  # 4 reads
        agent_api.search(team_agent, LONG)
        with pytest.raises(RateLimited):
            agent_api.search(team_agent, LONG)
        agent_api.search(team_agent, "deploy")  # the short ones still fit
    finally:
        agent_api.read_limiter.reset()
    assert agent_api.query_cost("deploy") == 1 and agent_api.query_cost("x" * 1000) == 5
