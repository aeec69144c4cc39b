"""Properties of the hybrid ranking that hold whatever the corpus: the one
record that has every content word of the query, or the query's identifier
verbatim, ranks first, however close the look-alikes around it are.

Each example adds its own records (with words no other example uses) to one
growing test database, so earlier examples' records are more distractors;
the fake embedder (tests/conftest.py) keeps it fast."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval import search as search_module
from retrieval.gate import Reader
from retrieval.query import STOPWORDS
from retrieval.search import search
from tests.conftest import examples

pytestmark = pytest.mark.django_db

_SERIAL = itertools.count()
# Made-up words (syllables, so they pass the prose check), each prefixed with
# the example's serial: no collision with the frame, the filler or another example.
word = st.lists(st.sampled_from(["ba", "ko", "ri", "mu", "te", "no", "sa", "vi", "lu"]), min_size=2, max_size=3).map(
    "".join
)
FRAME = "Written down on the day:"
FILLER = "the team wrote this down after the meeting and everyone agreed on the next steps".split()


@pytest.fixture(autouse=True)
def isolated_process_state(monkeypatch):
    monkeypatch.setattr(search_module, "access_counter", search_module._AccessCounter(flush_every=3600))
    monkeypatch.setattr(search_module, "_docfreq", search_module._DocFreq())


def _tag(serial: int) -> str:
    """The serial in letters: a word with a digit would read as an identifier."""
    return "q" + "".join("bcdfghjklm"[int(d)] for d in str(serial))


def _unique(words: list[str], serial: int) -> list[str]:
    out = []
    for w in words:
        token = f"{_tag(serial)}{w}"
        if token not in out and token not in STOPWORDS:
            out.append(token)
    return out


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(word, min_size=2, max_size=4),
    repeats=st.integers(1, 3),
    filler=st.integers(0, len(FILLER)),
    target_first=st.booleans(),
)
def test_the_only_record_with_every_content_word_ranks_first(make_record, words, repeats, filler, target_first):
    serial = next(_SERIAL)
    terms = _unique(words, serial)
    if len(terms) < 2:
        return
    query = " ".join(terms)
    # Look-alikes: each misses one query word but repeats the others (more
    # BM25 per word, a closer bag of words) and is shorter than the target.
    lookalikes = [
        dict(
            title=f"Note {serial} look-alike",
            body=f"{FRAME} " + " ".join([w for w in terms if w != missing] * repeats) + ".",
        )
        for missing in terms
    ]
    target = dict(title=f"Note {serial} with all", body=f"{FRAME} " + " ".join(terms + FILLER[:filler]) + ".")
    specs = [target, *lookalikes] if target_first else [*lookalikes, target]
    made = [make_record(tags=[f"p{serial}"], **spec) for spec in specs]
    expected = made[0] if target_first else made[-1]

    response = search(query, mode="hybrid", reader=Reader.everything(), limit=5, count_access=False)

    assert response.results[0].record.public_id == expected.public_id, [h.record.title for h in response.results]


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prefix=st.text("ABCDEFGHJKLMNPQRSTUVWXYZ", min_size=2, max_size=5),
    number=st.integers(10, 99_999),
    words=st.lists(word, min_size=0, max_size=2),
    near=st.integers(1, 9),
)
def test_the_only_record_with_the_identifier_verbatim_ranks_first(make_record, prefix, number, words, near):
    serial = next(_SERIAL)
    ident = f"{prefix}{serial}-{number}"
    extra = _unique(words, serial)
    query = " ".join([ident, *extra][:2])
    # Near misses: a longer number with the same start, the same number under
    # another prefix, the identifier's parts apart; all of them carry the
    # query's other words, the target does not.
    decoys = [
        f"{prefix}{serial}-{number}{near}",
        f"{prefix}{serial}X-{number}",
        f"{prefix}{serial} {number}",
    ]
    padding = " ".join(extra * 3)
    made = [
        make_record(title=f"Ticket {serial} {n}", tags=[f"p{serial}"], body=f"Ticket {decoy} {padding} noted.")
        for n, decoy in enumerate(decoys)
    ]
    target = make_record(title=f"Ticket {serial} target", tags=[f"p{serial}"], body=f"Follow-up on {ident} next week.")
    assert made

    response = search(query, mode="hybrid", reader=Reader.everything(), limit=5, count_access=False)

    assert response.results[0].record.public_id == target.public_id, [h.record.body for h in response.results]
