"""The quality check: what it flags, what it leaves alone, that it changes
nothing and stays inside the requested spaces; precision and recall of the
contradiction check on the seeded pairs in tests/data/quality_pairs.jsonl."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from retrieval import quality
from retrieval.embeddings import FakeEmbedder, SentenceTransformerEmbedder, default_model_path
from reviews import actions
from reviews.models import Proposal, Record

pytestmark = pytest.mark.django_db

PAIRS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "quality_pairs.jsonl").read_text().splitlines()
    if line.strip()
]


def kinds(report) -> dict[str, list]:
    found: dict[str, list] = {}
    for finding in report.findings:
        found.setdefault(finding.kind, []).append(finding)
    return found


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("Deploys happen every Tuesday.", "Deploys happen every Thursday.", "different weekdays"),
        ("The ledger runs PostgreSQL 15.4.", "The ledger runs PostgreSQL 16.2.", "different versions"),
        (
            "Keys are limited to 100 requests per minute.",
            "Keys are limited to 500 requests per minute.",
            "different numbers",
        ),
        ("Force pushes are allowed.", "Force pushes are never allowed.", "only one of them is negated ('never')"),
        ("Payments go through Stripe.", "Payments go through Adyen.", "different names: stripe vs adyen"),
    ],
)
def test_differences_name_what_changed(a, b, expected):
    reasons = quality.differences(a, b)
    assert any(expected in reason for reason in reasons), reasons


@pytest.mark.parametrize(
    "a, b",
    [
        ("Mei writes the release notes for every release.", "For every release, the release notes are written by Mei."),
        ("Logs are kept for 14 days in Loki.", "Loki keeps logs for 14 days."),
        ("We never deploy on Fridays.", "Deploys are not done on Fridays."),
        ("Sprint planning is on Monday at 10:00.", "On Monday at 10:00 we plan the sprint."),
    ],
)
def test_paraphrases_of_the_same_fact_show_no_difference(a, b):
    assert quality.differences(a, b) == []


def _seed_pairs(make_record, space="team"):
    ids = []
    for n, pair in enumerate(PAIRS):
        a = make_record(space=space, kind="fact", tags=[f"pair-{n}"], **pair["a"])
        b = make_record(space=space, kind="fact", tags=[f"pair-{n}"], **pair["b"])
        ids.append((a.public_id, b.public_id, pair["label"]))
    return ids


def precision_recall(report, ids) -> tuple[float, float, int, int, int]:
    """Over the labelled pairs only: the set reuses a text in several pairs (one record
    against its paraphrase, its contradiction and another client's), so two records of
    different pairs may meet in the check with no label to score them by."""
    labelled = {frozenset((a, b)) for a, b, _label in ids}
    flagged = {frozenset(f.records) for f in report.findings if f.kind == "possible_contradiction"} & labelled
    wanted = {frozenset((a, b)) for a, b, label in ids if label == "contradiction"}
    true_positive = len(flagged & wanted)
    precision = true_positive / len(flagged) if flagged else 1.0
    recall = true_positive / len(wanted)
    return precision, recall, true_positive, len(flagged), len(wanted)


@pytest.mark.slow
def test_seeded_contradictions_with_the_real_model(make_record, capsys):
    model = SentenceTransformerEmbedder(default_model_path(), "all-MiniLM-L6-v2", threads=0)
    ids = _seed_pairs(make_record)
    report = quality.run(["team"], embedder=model)  # records not in the index are embedded on the fly
    precision, recall, hits, flagged, wanted = precision_recall(report, ids)
    with capsys.disabled():
        print(
            f"\n[quality, {model.name}] precision {precision:.2f} recall {recall:.2f} "
            f"({hits} of {wanted} contradictions, {flagged} flagged)"
        )
    assert recall >= 0.8 and precision >= 0.8


def test_every_contradiction_says_why_and_what_to_do(make_record):
    a = make_record(title="Billing deploy day", body="The billing API deploys every Tuesday after the standup meeting.")
    b = make_record(
        title="Billing deploy day again", body="The billing API deploys every Thursday after the standup meeting."
    )
    [finding] = kinds(quality.run(["team"], embedder=FakeEmbedder()))["possible_contradiction"]
    assert set(finding.records) == {a.public_id, b.public_id}
    assert "tuesday vs thursday" in finding.why and "similarity" in finding.why
    assert "retire" in finding.suggestion


def test_contradictions_are_only_paired_within_a_space(make_record):
    make_record(
        space="personal",
        title="Billing deploy day",
        body="The billing API deploys every Tuesday after the standup meeting.",
    )
    make_record(
        space="team",
        title="Billing deploy day",
        body="The billing API deploys every Thursday after the standup meeting.",
    )
    assert "possible_contradiction" not in kinds(quality.run(embedder=FakeEmbedder()))


def test_a_team_report_never_mentions_personal_content(make_record, reviewer, agent):
    secret = make_record(
        space="personal",
        title="Dentist appointment Elm",
        body="My dentist is on Elm Street, every six months on Tuesday.",
    )
    make_record(
        space="personal",
        title="Dentist appointment Oak",
        body="My dentist is on Oak Street, every six months on Thursday.",
    )
    Record.objects.filter(pk=secret.pk).update(review_by=timezone.localdate() - timedelta(days=1))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE reviews_record SET body = body || ' (edited)' WHERE space = 'personal'")
    report = quality.run(["team"], embedder=FakeEmbedder())
    text = json.dumps(report.as_dict())
    assert "Dentist" not in text and "dentist" not in text and secret.public_id not in text
    assert len(quality.run(["personal"], embedder=FakeEmbedder()).findings) >= 2


def test_overdue_and_edited_records_are_flagged(make_record):
    overdue = make_record(title="Overdue note", body="The nightly export runs at two in the morning UTC.")
    edited = make_record(title="Edited note", body="The weekly report is mailed to the finance team on Monday.")
    Record.objects.filter(pk=overdue.pk).update(review_by=timezone.localdate() - timedelta(days=3))
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE reviews_record SET body = %s WHERE id = %s",
            ["Tampered text that nobody reviewed at all.", edited.pk],
        )
    found = kinds(quality.run(embedder=FakeEmbedder()))
    assert [f.records for f in found["overdue"]] == [[overdue.public_id]]
    assert [f.records for f in found["edited_since_approval"]] == [[edited.public_id]]
    assert "Verify" in found["overdue"][0].suggestion


def test_broken_supersession_and_loops_are_flagged(make_record, reviewer):
    first = make_record(title="First version", body="The cache TTL for product pages is five minutes.")
    second = actions.revise_record(
        first, actor=reviewer, changes={"body": "The cache TTL for product pages is ten minutes."}
    )
    orphan = make_record(title="Orphan", body="The search index is rebuilt every night by a cron job.")
    with connection.cursor() as cursor:  # damage done outside Vetted
        cursor.execute("UPDATE reviews_record SET status = 'superseded' WHERE id = %s", [orphan.pk])
        cursor.execute(
            "UPDATE reviews_record SET superseded_by_id = %s, status = 'superseded' WHERE id = %s",
            [first.pk, second.pk],
        )
    found = kinds(quality.run(embedder=FakeEmbedder()))
    assert [orphan.public_id] in [f.records for f in found["broken_supersession"]]
    [loop] = found["supersession_loop"]
    assert set(loop.records) == {first.public_id, second.public_id}


def test_old_pending_proposals_are_flagged(make_record, agent):
    record = make_record()
    retire = actions.propose_retirement(record, agent=agent, reason="The repository was archived last week.")
    fresh = actions.propose_create(
        agent=agent,
        reason="Told by the user today.",
        kind="fact",
        space="team",
        title="Fresh proposal",
        body="The staging cluster is rebuilt every Sunday night.",
    )
    Proposal.objects.filter(pk=retire.pk).update(created_at=timezone.now() - timedelta(days=30))
    found = kinds(quality.run(embedder=FakeEmbedder()))
    assert [f.proposals for f in found["stale_retirement"]] == [[retire.public_id]]
    assert "30 days" in found["stale_retirement"][0].why
    assert fresh.public_id not in json.dumps([f.as_dict() for f in quality.run(embedder=FakeEmbedder()).findings])


def test_index_drift_is_reported_in_detail_for_the_reviewer_only(make_record):
    make_record()  # queued for embedding, not synced
    detailed = kinds(quality.run(embedder=FakeEmbedder()))["index_drift"]
    assert any("queued" in f.why for f in detailed)
    [summary] = kinds(quality.run(embedder=FakeEmbedder(), full_index_report=False))["index_drift"]
    assert "queued" not in summary.why and "check_index" in summary.suggestion


def test_quality_command_prints_findings_and_json(make_record):
    make_record(title="Billing deploy day", body="The billing API deploys every Tuesday after the standup meeting.")
    make_record(title="Billing deploy day", body="The billing API deploys every Thursday after the standup meeting.")
    out = io.StringIO()
    call_command("quality", "--space", "team", stdout=out)
    text = out.getvalue()
    assert "Possible contradictions (1)" in text and "next: Read both" in text
    out = io.StringIO()
    call_command("quality", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["counts"]["possible_contradiction"] == 1 and data["spaces"] == ["personal", "team", "system"]


def test_quality_page_lists_findings_with_links_and_next_steps(client, reviewer, make_record):
    a = make_record(title="Billing deploy day", body="The billing API deploys every Tuesday after the standup meeting.")
    make_record(title="Billing deploy day", body="The billing API deploys every Thursday after the standup meeting.")
    make_record(space="personal", title="Private note", body="My locker code at the gym is in the password manager.")
    assert client.get("/quality/").status_code == 302  # login required
    client.force_login(reviewer)
    html = client.get("/quality/?space=team").content.decode()
    assert 'id="quality-possible_contradiction"' in html and f'href="/records/{a.public_id}/"' in html
    assert "Next: Read both" in html and "Private note" not in html
    assert client.get("/quality/?space=bogus").status_code == 200  # unknown space: all spaces


def test_a_flood_of_look_alikes_is_listed_up_to_the_limit_and_counted(make_record):
    for n in range(6):
        make_record(
            title=f"Rotation of service {n}", body=f"The ledger service rotates its signing keys every {n + 2} days."
        )
    report = quality.run(["team"], embedder=FakeEmbedder(), limit=3)
    listed = [f for f in report.findings if f.kind == "possible_contradiction"]
    assert len(listed) == 3 and report.omitted["possible_contradiction"] > 0
    assert report.as_dict()["counts"]["possible_contradiction"] == 3 + report.omitted["possible_contradiction"]
    similarities = [f.similarity or 0.0 for f in listed]
    assert similarities == sorted(similarities, reverse=True) and all(similarities)
    everything = quality.run(["team"], embedder=FakeEmbedder(), limit=0)
    assert not everything.omitted
    assert (
        len([f for f in everything.findings if f.kind == "possible_contradiction"])
        == 3 + report.omitted["possible_contradiction"]
    )


@pytest.mark.parametrize(
    "a, b",
    [
        (  # a reviewer saw "different names: prs vs url" on this kind of pair
            "Linking PRs to tickets\nEvery PR description links the Jira ticket it resolves.",
            "Ticket links in pull requests\nPull requests must include the URL of the Jira ticket they close.",
        ),
        (  # and "only one of them is negated ('deprecated')" on this one
            "The v1 export endpoint\nThe v1 export endpoint is deprecated; clients should call /api/v2/export.",
            "Use the v2 export endpoint\nClients should call /api/v2/export; the v1 endpoint is being phased out.",
        ),
        (
            "Feature flag tool\nFeature flags are managed in Unleash, not in environment variables.",
            "Where feature flags live\nWe manage feature flags with Unleash rather than environment variables.",
        ),
        (
            "No deploys on Fridays\nWe do not deploy to production on Fridays.",
            "Friday freeze\nDeploys are avoided on Fridays.",
        ),
    ],
)
def test_paraphrases_that_reword_or_say_no_differently_are_not_contradictions(a, b):
    assert quality.differences(a, b) == []


@pytest.mark.parametrize(
    "a, b",
    [
        (
            "Acme invoice terms\nAcme pays invoices within 30 days.",
            "Globex invoice terms\nGlobex pays invoices within 45 days.",
        ),
        (
            "Rate limit for the public API\nThe public API allows 60 requests per minute.",
            "Rate limit for the partner API\nThe partner API allows 600 requests per minute.",
        ),
        (
            "Okapi hotfixes\nOkapi hotfixes may be deployed on weekends.",
            "Northrail hotfixes\nNorthrail hotfixes may not be deployed on weekends.",
        ),
    ],
)
def test_the_same_statement_about_another_client_or_service_is_not_a_contradiction(a, b):
    found = quality.compare(a, b)
    assert found.reasons == [] and found.different_subject
    assert not quality.duplicate_like(a, b, 0.99)  # nor ever offered as a duplicate


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (
            "Flags are enabled by default in tests.",
            "Flags are disabled by default in tests.",
            "opposite words: enabled vs disabled",
        ),
        ("Hotfixes may be deployed on weekends.", "Hotfixes may not be deployed on weekends.", "negated ('not')"),
        ("Mei writes the release notes.", "Tom writes the release notes.", "different names: mei vs tom"),
        (
            "Public endpoints require TLS 1.2 or newer.",
            "Public endpoints require TLS 1.3 or newer; 1.2 is off.",
            "1.2 vs 1.3",
        ),
        ("The freeze starts on December 15.", "The freeze starts on December 20.", "different numbers: 15 vs 20"),
        (
            "Backups run nightly at 02:00 UTC.",
            "Backups run weekly at 02:00 UTC.",
            "different frequencies: nightly vs weekly",
        ),
        (
            "Hotfixes are deployed to staging first.",
            "Hotfixes are deployed to production first.",
            "different environments: staging vs production",
        ),
    ],
)
def test_a_detail_replaced_in_the_same_place_is_a_contradiction(a, b, expected):
    assert any(expected in reason for reason in quality.differences(a, b)), quality.differences(a, b)


def test_a_contradiction_or_a_loose_match_is_never_a_duplicate():
    same = "Log retention\nApplication logs are retained for 14 days in Grafana Loki."
    reworded = "How long logs are kept\nGrafana Loki keeps the application logs for 14 days."
    assert quality.duplicate_like(same, reworded, 0.9)
    assert not quality.duplicate_like(same, reworded, quality.DUPLICATE_SIMILARITY - 0.01)
    contradicting = "Log retention\nApplication logs are retained for 30 days in Grafana Loki."
    assert not quality.duplicate_like(same, contradicting, 0.97)


def test_the_labelled_pairs_are_many_and_varied_with_a_held_out_half():
    labels: dict[tuple[str, str], int] = {}
    for pair in PAIRS:
        labels.setdefault((pair["label"], pair["split"]), 0)
        labels[(pair["label"], pair["split"])] += 1
    assert len(PAIRS) >= 80
    for label in ("contradiction", "paraphrase", "different_subject", "related", "unrelated"):
        assert labels.get((label, "dev")) and labels.get((label, "test")), label


def test_quality_eval_prints_precision_and_recall_for_each_split():
    out = io.StringIO()
    call_command("quality", "--eval", stdout=out)
    text = out.getvalue()
    assert f"{len(PAIRS)} labelled pairs" in text
    for split in ("dev", "test", "all"):
        assert f"{split}" in text
    assert "contradiction" in text and "duplicate" in text and "precision" in text and "recall" in text


def test_quality_eval_refuses_a_bad_file_saying_what_a_pair_is(tmp_path):
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"label": "maybe", "a": {"title": "t", "body": "b"}, "b": {"title": "t", "body": "b"}}\n')
    with pytest.raises(CommandError, match="labels are contradiction, paraphrase"):
        call_command("quality", "--eval", str(bad))
    with pytest.raises(CommandError, match="no such file"):
        call_command("quality", "--eval", str(tmp_path / "missing.jsonl"))


@pytest.mark.slow
def test_the_rule_meets_its_targets_on_the_held_out_pairs_with_the_real_model():
    """Loads the embedding model (seconds): the figures docs/reviewer-hints.md reports."""
    from retrieval import quality_eval

    model = SentenceTransformerEmbedder(default_model_path(), "all-MiniLM-L6-v2", threads=0)
    pairs = quality_eval.load(Path(__file__).parent / "data" / "quality_pairs.jsonl")
    table = quality_eval.scores(quality_eval.evaluate(pairs, model))
    for split in ("test", "all"):
        contradiction, duplicate = table[split]["contradiction"], table[split]["duplicate"]
        assert contradiction.precision >= 0.8 and contradiction.recall >= 0.7, split
        assert duplicate.precision >= 0.9, split
