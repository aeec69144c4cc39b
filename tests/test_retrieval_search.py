"""Search: hostile input never breaks it, bad parameters are refused by name,
exact identifiers win, the three modes behave as designed, the `search`
command, and excerpts of long bodies."""

from __future__ import annotations

import io
import json
import re
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from retrieval import search as search_module
from retrieval.gate import Reader
from retrieval.search import BODY_CHUNK_OVER, LIMIT_MAX, MODES, SearchResponse, search
from reviews.errors import ValidationFailed
from reviews.models import SPACES, Record
from tests.shared_search_data import OverSharedData, fresh, shared_data

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def isolated_process_state(monkeypatch):
    monkeypatch.setattr(search_module, "access_counter", search_module._AccessCounter(flush_every=3600))
    monkeypatch.setattr(search_module, "_docfreq", search_module._DocFreq())


def find(query, **kwargs) -> SearchResponse:
    kwargs.setdefault("reader", Reader.everything())
    return search(query, **kwargs)


def ids(response) -> list[str]:
    return [hit.record.public_id for hit in response.results]


def run_search(*args) -> str:
    out = io.StringIO()
    call_command("search", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


# --------------------------------------------------------------------------- hostile queries


HOSTILE = [
    '"',
    '""',
    '"deploy',
    'deploy"window',
    "'",
    "it's",
    "NEAR(deploy window)",
    "NEAR(",
    "deploy NEAR/2 window",
    "*",
    "deploy*",
    "-",
    "-deploy",
    "deploy - window",
    "AND OR NOT",
    "NOT deploy",
    "deploy AND",
    "OR",
    "(deploy",
    "deploy)",
    "((()))",
    ")(",
    "title:",
    "title:deploy",
    "body:window tags:",
    "{title body}: deploy",
    "^",
    "^deploy",
    "deploy^2",
    "d" * 10_000,
    "deploy window " * 800,
    "🚀 deploy 🚀",
    "🚀🔥💥",
    "deploy\x00window",
    "\x00deploy",
    "!!!",
    "?.,;:",
    "@#$%^&*()",
    "'; DROP TABLE reviews_record; --",
    '" OR 1=1 --',
    "deploy'); DELETE FROM reviews_record; --",
    "%",
    "_",
    "\\",
    '\\"',
    "\u202etxet",
    "ǅungla",
    "naïve café",
    "zeﬁ",
    "\u0301\u0301",
    "a-b-c-d-e-f-g-h-i-j-k-l",
    "x" * 3 + "/" * 500,
    "--" * 1000,
    "1.2.3.4.5.6.7.8.9.10.11.12",
    "_" * 5000 + "a",
    "ACME-1234" * 300,
]


# --------------------------------------------------------------------------- over two records


def _two_records(cast):
    deploy = cast.make_record(
        title="Deploy window",
        tags=["deploy"],
        body="Deploys of the billing service happen on Tuesdays after the standup meeting.",
    )
    coffee = cast.make_record(
        title="Coffee machine location",
        tags=["office"],
        body="The coffee machine is on the third floor next to the kitchen sink.",
    )
    return deploy, coffee


@pytest.mark.xdist_group("retrieval_search.TestOverTwoRecords")
class TestOverTwoRecords(OverSharedData):
    """The tests that search the deploy and the coffee record: hostile queries,
    the three modes, the search command, a short body. The two records are
    made once for the class (tests/shared_search_data.py); a test's own records
    and access counts roll back with its savepoint."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _two_records) as cast:
            yield cast

    @pytest.fixture
    def two_records(self, shared):
        return fresh(shared.data)

    @pytest.mark.parametrize("mode", MODES)
    def test_hostile_queries_never_raise(self, two_records, mode):
        deploy, _coffee = two_records
        for query in HOSTILE:
            response = find(query, mode=mode)
            assert isinstance(response, SearchResponse), query
            assert response.mode == mode
            assert len(response.results) <= 8
            json.dumps(response.as_dict())
        assert Record.objects.count() == 2
        assert deploy.public_id in ids(find("deploy window", mode=mode))

    def test_a_long_query_is_cut_not_refused(self, two_records):
        deploy, _ = two_records

        response = find("tuesdays standup " + "x" * 9_000, mode="keyword")

        assert ids(response) == [deploy.public_id]
        assert len(response.query) == search_module.QUERY_MAX_CHARS

    def test_control_characters_in_a_query_are_blanked(self, two_records):
        deploy, _ = two_records

        response = find("tuesdays\x00standup\x07", mode="keyword")

        assert response.query == "tuesdays standup"
        assert ids(response) == [deploy.public_id]

    def test_a_query_of_only_control_characters_is_refused_like_an_empty_one(self, two_records):
        with pytest.raises(ValidationFailed) as caught:
            find("\x00\x07\x1b", mode="semantic")

        assert "query" in caught.value.fields

    def test_keyword_mode_needs_a_shared_word(self, two_records):
        deploy, _coffee = two_records

        response = find("tuesdays standup", mode="keyword")

        assert ids(response) == [deploy.public_id]
        assert response.results[0].vector == 0.0

    def test_keyword_mode_matches_word_stems(self, two_records):
        deploy, _ = two_records

        assert ids(find("deploying", mode="keyword")) == [deploy.public_id]

    def test_semantic_mode_ranks_every_record_by_vector_similarity(self, two_records):
        deploy, coffee = two_records

        response = find("tuesdays standup", mode="semantic")

        assert ids(response) == [deploy.public_id, coffee.public_id]
        top, other = response.results
        assert top.score == top.vector > other.vector
        assert top.coverage == 0.0 and top.identifiers == 0.0

    def test_semantic_mode_finds_a_record_by_shared_words(self, two_records):
        _deploy, coffee = two_records

        response = find("kitchen sink coffee", mode="semantic")

        assert ids(response)[0] == coffee.public_id
        assert response.results[0].vector > 0.3

    def test_hybrid_mode_drops_weak_vector_only_candidates(self, two_records):
        deploy, _coffee = two_records

        semantic = find("tuesdays standup", mode="semantic")
        hybrid = find("tuesdays standup", mode="hybrid")

        assert ids(hybrid) == [deploy.public_id]
        assert hybrid.results[0].score > semantic.results[0].score
        assert hybrid.results[0].coverage == pytest.approx(1.0)

    def test_all_modes_return_results_for_a_matching_query(self, two_records):
        deploy, _ = two_records

        for mode in MODES:
            started = time.perf_counter()
            response = find("billing service deploys", mode=mode)
            elapsed_ms = (time.perf_counter() - started) * 1000
            assert ids(response)[:1] == [deploy.public_id], mode
            assert response.mode == mode
            # Measured inside the call, in milliseconds: positive and within the time around it.
            assert 0 < response.took_ms <= elapsed_ms, (response.took_ms, elapsed_ms)

    def test_search_command_prints_a_table(self, two_records):
        deploy, _ = two_records

        output = run_search("tuesdays standup", "--mode", "keyword")

        lines = output.rstrip("\n").splitlines()
        assert re.fullmatch(rf" 1\.\s+-?\d+\.\d{{3}}  {deploy.public_id}  \[fact/team\] Deploy window", lines[0])
        assert re.fullmatch(r"withheld: none  \(\d+\.\d ms, keyword\)", lines[-1])
        assert len(lines) == 2

    def test_search_command_json_output_parses(self, two_records, make_record):
        deploy, _ = two_records
        stale = make_record(title="Old deploy window", body="Deploys of the billing service happened on Mondays.")
        Record.objects.filter(pk=stale.pk).update(review_by=timezone.localdate() - timedelta(days=1))

        data = json.loads(run_search("billing deploys", "--json", "--mode", "keyword"))

        assert [r["id"] for r in data["results"]] == [deploy.public_id]
        assert data["withheld"] == {"overdue": 1} and data["withheld_total"] == 1
        assert data["mode"] == "keyword" and data["query"] == "billing deploys"
        assert set(data["results"][0]) >= {"id", "title", "kind", "space", "tags", "body", "score", "review_by"}

    def test_search_command_counts_access_without_a_manual_flush(self, two_records):
        deploy, _ = two_records

        run_search("tuesdays standup", "--mode", "keyword")

        assert Record.objects.get(pk=deploy.pk).access_count == 1

    def test_search_command_reports_validation_errors(self, two_records):
        with pytest.raises(CommandError, match="limit: got 0"):
            run_search("deploy", "--limit", "0")

    def test_search_command_runs_a_queries_file_one_json_line_per_query(self, two_records, tmp_path):
        deploy, coffee = two_records
        lines = [
            json.dumps({"query": "tuesdays standup", "mode": "keyword"}),
            json.dumps({"query": "kitchen sink coffee", "limit": 1}),
            "",
            "{not json",
            json.dumps({"query": "deploy", "mode": "fuzzy"}),
            json.dumps(["a", "list"]),
            json.dumps({"query": "  "}),
            json.dumps({"query": "deploy", "limit": 0}),
            json.dumps({"query": 'NEAR( " * ^'}),
        ]
        queries = tmp_path / "queries.jsonl"
        queries.write_text("\n".join(lines) + "\n", encoding="utf-8")

        output = [json.loads(line) for line in run_search("--queries", str(queries)).splitlines()]

        assert [item["line"] for item in output] == [1, 2, 4, 5, 6, 7, 8, 9]
        by_line = {item["line"]: item for item in output}
        assert [r["id"] for r in by_line[1]["results"]] == [deploy.public_id]
        assert by_line[1]["mode"] == "keyword"
        assert [r["id"] for r in by_line[2]["results"]] == [coffee.public_id]
        assert by_line[2]["mode"] == "hybrid"
        assert "error" in by_line[4] and "results" not in by_line[4]
        assert "mode" in by_line[5]["error"] and "allowed: hybrid, keyword, semantic" in by_line[5]["error"]
        assert by_line[6]["error"] == "must be a JSON object"
        assert by_line[7]["error"].startswith("query: required")
        assert "limit" in by_line[8]["error"]
        assert "results" in by_line[9]

    def test_search_command_reads_queries_from_standard_input(self, two_records, monkeypatch):
        deploy, _ = two_records
        monkeypatch.setattr(
            "sys.stdin", io.StringIO(json.dumps({"query": "tuesdays standup", "mode": "keyword"}) + "\n")
        )

        output = [json.loads(line) for line in run_search("--queries", "-").splitlines()]

        assert [[r["id"] for r in item["results"]] for item in output] == [[deploy.public_id]]

    def test_search_command_queries_file_survives_an_infinite_limit(self, two_records, tmp_path):
        queries = tmp_path / "queries.jsonl"
        queries.write_text('{"query": "deploy", "limit": 1e400}\n{"query": "coffee"}\n')

        output = [json.loads(line) for line in run_search("--queries", str(queries)).splitlines()]

        assert "limit" in output[0]["error"]
        assert output[1]["results"]

    def test_a_short_body_is_returned_whole(self, two_records):
        deploy, _ = two_records

        for mode in MODES:
            result = find("tuesdays standup", mode=mode).as_dict()["results"][0]
            assert result["body"] == deploy.body
            assert result["body_is_excerpt"] is False


def test_operator_words_in_a_query_are_plain_words(make_record):
    near = make_record(
        title="Near the station", tags=["office"], body="The office is near the station and not far from the river."
    )

    assert ids(find("NEAR", mode="keyword")) == [near.public_id]
    assert ids(find("NOT", mode="keyword")) == [near.public_id]


# --------------------------------------------------------------------------- parameter validation


@pytest.mark.parametrize("query", ["", "   ", "\n\t ", None, 42, ["deploy"]])
def test_an_empty_or_non_text_query_is_refused(query):
    with pytest.raises(ValidationFailed) as caught:
        find(query)

    assert set(caught.value.fields) == {"query"}
    assert "required" in caught.value.fields["query"]


@pytest.mark.parametrize("mode", ["", "fuzzy", "KEYWORD", None, 1])
def test_an_unknown_mode_is_refused_with_the_allowed_modes(mode):
    with pytest.raises(ValidationFailed) as caught:
        find("deploy", mode=mode)

    assert set(caught.value.fields) == {"mode"}
    assert "allowed: hybrid, keyword, semantic" in caught.value.fields["mode"]


@pytest.mark.parametrize("limit", [0, -1, LIMIT_MAX + 1, 1000, "x", "", None, "1.5", float("nan"), [3]])
def test_a_limit_outside_the_range_is_refused_with_the_range(limit):
    with pytest.raises(ValidationFailed) as caught:
        find("deploy", limit=limit)

    assert set(caught.value.fields) == {"limit"}
    assert f"a whole number from 1 to {LIMIT_MAX}" in caught.value.fields["limit"]


def test_an_infinite_limit_is_refused_like_any_other_bad_limit():
    with pytest.raises(ValidationFailed) as caught:
        find("deploy", limit=float("inf"))

    assert set(caught.value.fields) == {"limit"}


def test_every_problem_is_reported_at_once():
    with pytest.raises(ValidationFailed) as caught:
        find("  ", mode="nope", limit=0)

    assert set(caught.value.fields) == {"query", "mode", "limit"}


def _deploy_notes(cast):
    for n in range(3):
        cast.make_record(title=f"Deploy note {n}", body=f"Deploy note number {n} about the release train schedule.")


@pytest.mark.xdist_group("retrieval_search.TestLimits")
class TestLimits(OverSharedData):
    """Three deploy notes, made once for the three limits."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _deploy_notes) as cast:
            yield cast

    @pytest.mark.parametrize("limit", [1, LIMIT_MAX, "7"])
    def test_limits_in_the_range_are_accepted(self, shared, limit):
        response = find("deploy note", limit=limit, mode="keyword")

        assert len(response.results) == min(int(limit), 3)


# --------------------------------------------------------------------------- identifiers


def _identifier_records(cast):
    """Distractors first (lower ids win ties) and word-rich, so only exact
    identifier evidence can put the right record first."""

    def make(title, body):
        return cast.make_record(title=title, body=body, tags=["ids"])

    records = {
        "worker": make("Billing worker repo", "The acme/billing-worker repo runs the acme billing api queue."),
        "api-v2": make("Next billing repo", "The acme/billing-api-v2 repo is where the next billing api is hosted."),
        "acme-1235": make("Invoice rounding ticket", "Ticket ACME-1235 tracks invoice rounding in the billing export."),
        "21.0.30": make("JDK pin for batch", "The build image pins the JDK at 21.0.30 for the batch runners."),
        "secret-words": make("Stripe webhook secret", "The Stripe webhook secret is rotated by the payments team."),
        "secret-old": make("Old webhook variable", "STRIPE_WEBHOOK_SECRET_OLD is no longer read by the worker."),
        "dry-words": make("Dry run first", "Always do a dry run of the migration, then the real run."),
        "acme/billing-api": make(
            "Billing source location", "Source for the billing service lives in acme/billing-api on the main branch."
        ),
        "ACME-1234": make(
            "Invoice fix ticket", "Ticket ACME-1234 tracks the fix for invoice rounding in the billing export run."
        ),
        "21.0.3": make("JDK pin for services", "The build image pins the JDK at 21.0.3 for the web services."),
        "STRIPE_WEBHOOK_SECRET": make(
            "Payments environment", "Set STRIPE_WEBHOOK_SECRET in the environment before starting payments."
        ),
        "--dry-run": make("Deploy script flags", "Pass --dry-run to the deploy script to print the plan only."),
    }
    return records


@pytest.mark.xdist_group("retrieval_search.TestIdentifiers")
class TestIdentifiers(OverSharedData):
    """Exact identifiers against their near misses: 32 cases over the same
    twelve records, made once for the class (they took 0.6-0.8 s of every
    case's setup)."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _identifier_records) as cast:
            yield cast

    @pytest.fixture
    def identifier_records(self, shared):
        return fresh(shared.data)

    @pytest.mark.parametrize("mode", ["keyword", "hybrid"])
    @pytest.mark.parametrize(
        "query, expected",
        [
            ("acme/billing-api", "acme/billing-api"),
            ("ACME-1234", "ACME-1234"),
            ("acme-1234", "ACME-1234"),
            ("21.0.3", "21.0.3"),
            ("STRIPE_WEBHOOK_SECRET", "STRIPE_WEBHOOK_SECRET"),
            ("--dry-run", "--dry-run"),
            ("where is acme/billing-api hosted", "acme/billing-api"),
            ("status of ACME-1234 invoice rounding", "ACME-1234"),
            ("which JDK 21.0.3 image", "21.0.3"),
        ],
    )
    def test_an_exact_identifier_is_found_first(self, identifier_records, query, expected, mode):
        response = find(query, mode=mode)

        assert ids(response)[:1] == [identifier_records[expected].public_id]
        assert response.results[0].identifiers > 0

    @pytest.mark.parametrize("mode", ["keyword", "hybrid"])
    @pytest.mark.parametrize(
        "query, near_miss",
        [
            ("21.0.3", "21.0.30"),
            ("ACME-1234", "acme-1235"),
            ("acme/billing-api", "worker"),
            ("acme/billing-api", "api-v2"),
            ("STRIPE_WEBHOOK_SECRET", "secret-old"),
            ("STRIPE_WEBHOOK_SECRET", "secret-words"),
            ("--dry-run", "dry-words"),
        ],
    )
    def test_near_miss_identifiers_get_no_identifier_credit(self, identifier_records, query, near_miss, mode):
        response = find(query, mode=mode, limit=20)

        by_id = {hit.record.public_id: hit for hit in response.results}
        miss = by_id.get(identifier_records[near_miss].public_id)
        assert miss is None or miss.identifiers == 0
        assert ids(response).index(identifier_records[query].public_id) == 0


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_longer_dotted_version_does_not_count_as_the_version(make_record, mode):
    longer = make_record(title="JDK pin", body="The build image pins the JDK to 21.0.3.1 today.", tags=["build"])
    exact = make_record(
        title="JDK pin for the services",
        tags=["build"],
        body="The build image pins the JDK to 21.0.3 for every service and the runner.",
    )

    response = find("21.0.3", mode=mode)

    assert ids(response)[0] == exact.public_id
    assert all(hit.identifiers == 0 for hit in response.results if hit.record == longer)


def test_identifier_helpers_recognise_identifiers_and_words():
    assert search_module.query_identifiers("deploy acme/billing-api with --dry-run, ticket ACME-1234") == [
        "acme/billing-api",
        "--dry-run",
        "ACME-1234",
    ]
    assert search_module.query_identifiers("JDK 21.0.3 and STRIPE_WEBHOOK_SECRET") == [
        "21.0.3",
        "STRIPE_WEBHOOK_SECRET",
    ]
    assert search_module.query_identifiers("how do we deploy") == []
    assert search_module.query_terms("How do we deploy the API?") == ["deploy", "api"]
    assert search_module.query_terms("what is it") == ["what", "is", "it"]


# --------------------------------------------------------------------------- modes


def test_hybrid_mode_lets_full_keyword_coverage_beat_a_closer_vector(make_record):
    # The fake embedder sees exact tokens only; the keyword index stems, so
    # "deploying releases" covers every word of `calendar` (deploys, releases)
    # while `guide` shares the exact token "deploying" and wins on vectors.
    calendar = make_record(title="Release calendar", tags=["release"], body="Deploys and releases happen on Tuesdays.")
    guide = make_record(
        title="Deploying guide",
        tags=["deploy"],
        body="Deploying the mobile app is done by the bot from the main branch.",
    )

    semantic = find("deploying releases", mode="semantic")
    hybrid = find("deploying releases", mode="hybrid")

    assert ids(semantic) == [guide.public_id, calendar.public_id]
    assert ids(hybrid) == [calendar.public_id, guide.public_id]
    top = hybrid.results[0]
    assert top.coverage == pytest.approx(1.0)
    assert top.score > top.vector


# --------------------------------------------------------------------------- the search command


def test_search_command_table_shows_withheld_counts_and_no_results(make_record):
    record = make_record(title="Deploy window", body="Deploys of the billing service happen on Tuesdays.")
    Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=1))

    output = run_search("tuesdays", "--mode", "keyword")

    assert output.splitlines()[0] == "No results."
    assert "withheld: overdue: 1" in output
    assert "Deploys of the billing" not in output


def _scoped_records(cast):
    team = cast.make_record(
        title="Team parking rules", tags=["office"], body="Team members park on level two after eight in the morning."
    )
    personal = cast.make_record(
        space="personal",
        title="My parking spot",
        tags=["me"],
        body="My own parking spot is number forty two on level minus one.",
    )
    return team, personal


@pytest.mark.xdist_group("retrieval_search.TestSearchCommandSpaces")
class TestSearchCommandSpaces(OverSharedData):
    """The search command's spaces and filters over a team and a personal record, made once for the class."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _scoped_records) as cast:
            yield cast

    @pytest.fixture
    def scoped_records(self, shared):
        return fresh(shared.data)

    @pytest.mark.parametrize(
        "space_args, expected",
        [
            ([], {"team", "personal"}),
            (["--space", "team"], {"team"}),
            (["--space", "personal"], {"personal"}),
            (["--space", "Team, personal"], {"team", "personal"}),
            (["--space", "system"], set()),
        ],
    )
    def test_search_command_space_restricts_the_reader(self, scoped_records, space_args, expected):
        team, personal = scoped_records
        by_name = {"team": team.public_id, "personal": personal.public_id}

        data = json.loads(run_search("parking level", "--json", *space_args))

        assert {r["id"] for r in data["results"]} == {by_name[name] for name in expected}
        assert data["withheld"] == {}

    def test_search_command_passes_filters(self, scoped_records):
        team, _personal = scoped_records

        data = json.loads(run_search("parking", "--json", "--tag", "OFFICE", "--kind", "fact"))

        assert [r["id"] for r in data["results"]] == [team.public_id]

    def test_search_command_refuses_an_unknown_space_listing_the_allowed_ones(self, scoped_records):
        with pytest.raises(CommandError) as caught:
            run_search("parking", "--space", "team,galaxy")

        assert "galaxy" in str(caught.value)
        assert f"allowed: {', '.join(SPACES)}" in str(caught.value)

    def test_search_command_refuses_an_unknown_kind_listing_the_allowed_ones(self, scoped_records):
        with pytest.raises(CommandError) as caught:
            run_search("parking", "--kind", "rumour")

        message = str(caught.value)
        assert "rumour" in message
        for kind in ("decision", "event", "fact", "preference", "procedure", "reference"):
            assert kind in message

    def test_search_command_queries_file_applies_space_to_every_line(self, scoped_records, tmp_path):
        team, _personal = scoped_records
        queries = tmp_path / "queries.jsonl"
        queries.write_text(json.dumps({"query": "parking"}) + "\n" + json.dumps({"query": "level"}) + "\n")

        output = [json.loads(line) for line in run_search("--queries", str(queries), "--space", "team").splitlines()]

        assert [[r["id"] for r in item["results"]] for item in output] == [[team.public_id], [team.public_id]]


@pytest.mark.parametrize("args", [[], ["parking", "--queries", "x.jsonl"]])
def test_search_command_wants_a_query_or_a_queries_file(args):
    with pytest.raises(CommandError, match="Give either a QUERY or --queries"):
        run_search(*args)


# --------------------------------------------------------------------------- long bodies


SECTIONS = {
    "Deploy": "Promote the canary artifact from the staging registry, then watch the rollout gates closely.",
    "Rollback": "Revert to the previous release snapshot and restore the database from the nightly backup.",
    "Monitoring": "Watch the latency dashboard; the pager alert fires above the error threshold graph.",
    "Contacts": "Escalate to the service owner on the rota phone, then the manager in the ops channel.",
}


def runbook_body() -> str:
    parts = []
    for name, sentence in SECTIONS.items():
        filler = " ".join(f"Note {n} for the {name.lower()} stage of this service." for n in range(12))
        parts.append(f"## {name}\n\n{sentence} {filler}")
    return "\n\n".join(parts)


def _runbook(cast):
    return cast.make_record(title="Service runbook", tags=["runbook"], body=runbook_body())


@pytest.mark.xdist_group("retrieval_search.TestLongBodies")
class TestLongBodies(OverSharedData):
    """One runbook of four sections, made once for the class: each test asks for another part of it."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls, django_db_setup, django_db_blocker):
        with shared_data(django_db_blocker, _runbook) as cast:
            yield cast

    @pytest.fixture
    def runbook(self, shared):
        return fresh(shared.data)

    @pytest.mark.parametrize("mode", ["hybrid", "semantic"])
    def test_a_long_body_is_returned_as_its_best_matching_section(self, runbook, mode):
        body = runbook_body()
        assert len(body) > BODY_CHUNK_OVER
        record = runbook
        assert record.body == body

        response = find("revert previous release snapshot restore database backup", mode=mode)

        assert ids(response) == [record.public_id]
        result = response.as_dict()["results"][0]
        assert result["body_is_excerpt"] is True
        assert result["body"].startswith("## Rollback")
        assert SECTIONS["Rollback"] in result["body"]
        assert "## Monitoring" not in result["body"] and "## Deploy" not in result["body"]
        assert len(result["body"]) < len(body)
        assert not result["body"].startswith("Service runbook")

    def test_another_query_picks_another_section(self, runbook):
        record = runbook

        result = find("latency dashboard pager alert threshold").as_dict()["results"][0]

        assert result["id"] == record.public_id
        assert result["body"].startswith("## Monitoring")

    def test_the_first_section_excerpt_drops_the_title_and_tags_header(self, runbook):
        result = find("promote canary artifact staging registry rollout gates").as_dict()["results"][0]

        assert result["body_is_excerpt"] is True
        assert result["body"].startswith("## Deploy")

    def test_keyword_mode_returns_a_long_body_whole(self, runbook):
        record = runbook

        result = find("revert snapshot", mode="keyword").as_dict()["results"][0]

        assert result["id"] == record.public_id
        assert result["body"] == record.body
        assert result["body_is_excerpt"] is False


def test_document_frequencies_survive_a_reset_by_another_thread(make_record):
    """Under load one request thread reset the shared idf cache while another
    was filling it, and the second failed with a KeyError (a 500)."""
    make_record(title="Ledger keys", body="The ledger service rotates its signing keys every week.")
    freq = search_module._DocFreq()

    class ResettingCursor:
        """Runs the real queries, and plays the other thread: after each
        word count it resets the cache as a newly added record would."""

        def __init__(self, cursor):
            self.cursor = cursor

        def execute(self, sql, params=None):
            self.cursor.execute(sql, params)
            if "MATCH" in sql or "@@" in sql:  # a word count on SQLite (FTS5) or PostgreSQL (tsvector)
                with freq._lock:
                    freq._parts.clear()  # the cache as another thread leaves it

        def fetchone(self):
            return self.cursor.fetchone()

    from django.db import connection

    with connection.cursor() as cursor:
        idf = freq.idf(ResettingCursor(cursor), "team", ["ledger", "keys", "rotates"])
    assert set(idf) == {"ledger", "keys", "rotates"} and all(v > 0 for v in idf.values())
