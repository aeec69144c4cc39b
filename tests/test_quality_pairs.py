"""The quality check over the whole labelled corpus (tests/data/quality_pairs.jsonl):
precision and recall of the contradiction check, and that a run over every
space changes nothing.

Both tests read the same 184 records (92 pairs). Made through the real
actions (propose, then accept) they took 20-23 s of each test's time, most
of it the duplicate check of every proposal; here they are made once per
module (``pairs``) inside a transaction that is rolled back when the module
ends, and each test runs in a savepoint of its own on top of it, as any
test does. The ``xdist_group`` keeps both on one worker (the Makefile runs
`--dist loadgroup`), so the corpus is made once per run. The real model's
run over the same pairs is in tests/test_quality.py (slow).
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from retrieval import quality
from retrieval.embeddings import FakeEmbedder
from reviews import actions
from reviews.models import AuditEvent, Record
from tests.conftest import content
from tests.test_quality import _seed_pairs, precision_recall

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("quality-pairs")]


@pytest.fixture(scope="module")
def pairs(django_db_setup, django_db_blocker):
    """[(id a, id b, label)] of the seeded pairs, all approved in team, made
    as the conftest's ``make_record`` makes records (rita accepts what the
    claude-code agent proposed), in a transaction rolled back at the end."""
    with django_db_blocker.unblock(), transaction.atomic():
        reviewer = get_user_model().objects.create_superuser("rita", "rita@example.com", "a-long-password-1")
        actions.claim_unowned_spaces(reviewer, actor=actions.SystemActor("tests"))
        agent, _token = actions.create_agent(
            "claude-code", spaces=["personal", "team"], actor=reviewer, source_tool="claude-code"
        )

        def make_record(**overrides):
            proposal = actions.propose_create(agent=agent, reason="Seen in the repo README", **content(**overrides))
            return actions.accept_proposal(proposal, actor=reviewer).result_record

        yield _seed_pairs(make_record)
        transaction.set_rollback(True)


def test_seeded_contradictions_are_found_and_paraphrases_are_not(pairs, capsys):
    report = quality.run(["team"], embedder=FakeEmbedder())
    precision, recall, hits, flagged, wanted = precision_recall(report, pairs)
    with capsys.disabled():
        print(
            f"\n[quality, fake embedder] precision {precision:.2f} recall {recall:.2f} "
            f"({hits} of {wanted} contradictions, {flagged} flagged)"
        )
    assert recall >= 0.9 and precision >= 0.9
    paraphrases = {frozenset((a, b)) for a, b, label in pairs if label == "paraphrase"}
    assert not paraphrases & {frozenset(f.records) for f in report.findings}


def test_the_check_changes_nothing(pairs):
    before = (
        Record.objects.count(),
        AuditEvent.objects.count(),
        list(Record.objects.values_list("updated_at", flat=True)),
    )
    assert before[0] == 2 * len(pairs)
    quality.run(embedder=FakeEmbedder())
    after = (
        Record.objects.count(),
        AuditEvent.objects.count(),
        list(Record.objects.values_list("updated_at", flat=True)),
    )
    assert before == after
