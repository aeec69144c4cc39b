"""No oracle: for an agent, every response is identical whether or not records
or proposals it may not see exist, except for the ``withheld`` counts (and
quality findings by id) of records once approved in its own spaces.

A team agent ("team-bot", spaces {team}) runs one fixed battery of calls
(search in every mode with every filter, read, list, describe, quality_check,
proposals hitting exact and near duplicates, error texts) through the real
MCP server (in process, over its ASGI app with the bearer token) and the
REST API (Django's test client). The battery runs three times:

1. over the visible world only;
2. after seeding what it may not see: a look-alike personal space, other
   agents' pending proposals (in team and personal), and withheld team
   records (edited since approval, overdue, expired, disputed, retired,
   superseded by a move to personal);
3. after changing what it may not see: approving a personal record full of
   the battery's words, editing the edited team record again out of band with
   new words, more pending proposals.

Whole responses are compared (took_ms is measured, so dropped): 1 == 2 after
removing withheld counts and findings about the seeded withheld team records
(which must name them by id only); 2 == 3 in full. Nothing the agent may not
see may appear in any response, and a search does exactly the same SQL.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client as DjangoClient
from django.test import TestCase, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge import agent_api
from retrieval import search as search_module
from retrieval.gate import Reader
from reviews import actions
from reviews.models import Proposal, ProposalState, Record

REASON = "Seen in the team handbook today"
PERSONAL_IDS = ["rec_00000000a001", "rec_00000000a002", "rec_00000000a003"]
MODES = ("hybrid", "keyword", "semantic")
QUERIES = [
    "billing invoice export",
    "acme/billing-api",
    "ACME-4711",
    "how do we deploy the billing service",
    "alpha bravo charlie",
    "ledger reconciliation nightly",
    "zebra quantum walrus",
]
FILTERS: list[dict[str, Any]] = [{}, {"kind": "procedure"}, {"space": "team"}, {"tags": ["billing"]}, {"limit": 2}]

VISIBLE: list[dict[str, Any]] = [
    {
        "kind": "procedure",
        "title": "Billing service deploys",
        "tags": ["billing", "deploy"],
        "body": "The billing service in acme/billing-api deploys from main every weekday after the standup.",
    },
    {
        "kind": "fact",
        "title": "Invoice export schedule",
        "tags": ["billing", "exports"],
        "body": "Invoice exports run nightly at two and land in the finance bucket for the accountants.",
    },
    {
        "kind": "fact",
        "title": "Ledger reconciliation",
        "tags": ["ledger"],
        "body": "The ledger reconciliation job compares nightly totals with the bank statement, ticket ACME-4711.",
    },
    {
        "kind": "reference",
        "title": "Alpha notes",
        "tags": ["words"],
        "body": "Alpha is the first word of the phonetic alphabet used by the support desk on calls.",
    },
    {
        "kind": "reference",
        "title": "Bravo notes",
        "tags": ["words"],
        "body": "Bravo is the second word of the phonetic alphabet used by the support desk on calls.",
    },
    {
        "kind": "reference",
        "title": "Charlie notes",
        "tags": ["words"],
        "body": "Charlie is the third word of the phonetic alphabet used by the support desk on calls.",
    },
    {
        "kind": "procedure",
        "title": "Release runbook",
        "tags": ["deploy", "runbook"],
        "body": "\n\n".join(
            f"## Step {n}\n\nRelease step {n}: tag the build, run the billing smoke tests and "
            f"watch the dashboards for ten minutes before moving on to step {n + 1}."
            for n in range(12)
        ),
    },
]
OWN_PENDING: dict[str, Any] = {
    "kind": "decision",
    "title": "Refund approvals need two people",
    "tags": ["billing"],
    "body": "Refunds above five hundred euros need the approval of two people from the finance team.",
}
# What the battery proposes (each one a near or exact copy of something the
# agent may or may not see, depending on the world).
NEAR_OTHERS: dict[str, Any] = {
    "kind": "fact",
    "title": "Payment retries on failure",
    "tags": ["billing"],
    "body": "Failed card payments are retried three times over two days before the invoice is cancelled.",
}
EXACT_OTHERS: dict[str, Any] = {
    "kind": "fact",
    "title": "Chargeback handling",
    "tags": ["billing"],
    "body": "Chargebacks are answered within seven days with the signed delivery receipt attached.",
}
OVERDUE_COPY: dict[str, Any] = {
    "kind": "fact",
    "title": "Billing contact",
    "tags": ["billing"],
    "body": "The billing contact for vendor questions is the finance desk on the second floor.",
}
PERSONAL_LOOKALIKE: dict[str, Any] = {
    "kind": "fact",
    "title": "Billing dentist invoice",
    "tags": ["billing"],
    "body": "My dentist sends the billing invoice by post every quarter, billing code ACME-4711.",
}


def team(**fields) -> dict:
    return {"space": "team", **fields}


# --------------------------------------------------------------------------- the worlds


def approve(agent, reviewer, **fields):
    proposal = actions.propose_create(agent=agent, reason=REASON, **fields)
    return actions.accept_proposal(proposal, actor=reviewer).result_record


def build_world(reviewer, agent, team_agent) -> dict:
    """The visible world. ``agent`` (claude-code: personal+team) plays
    "another agent"; a personal-only agent owns the look-alike space."""
    diary, _ = actions.create_agent("diary", spaces=["personal"], actor=reviewer)
    visible = [approve(team_agent, reviewer, **team(**fields)) for fields in VISIBLE]
    own = actions.propose_create(agent=team_agent, reason=REASON, **team(**OWN_PENDING))
    _, token = actions.rotate_agent_token("team-bot", actor=reviewer)
    return {
        "visible": visible,
        "own": own,
        "token": token,
        "other": agent,
        "diary": diary,
        "reviewer": reviewer,
        "me": team_agent,
        "hidden_withheld": [],
        "hidden_text": [],
    }


# The battery reads far faster than an agent may (limits have their own tests).
NO_LIMITS = {"VETTED_PROPOSALS_PER_MINUTE": 0, "VETTED_READS_PER_MINUTE": 0}


@pytest.fixture
def world(reviewer, agent, team_agent, settings):
    for name, value in NO_LIMITS.items():
        setattr(settings, name, value)
    return build_world(reviewer, agent, team_agent)


@pytest.fixture(scope="class")
def shared_world(django_db_setup, django_db_blocker):
    """``world`` built once for a class of tests that only read it or write
    in their own savepoint (pytest-django's ``db``), in a transaction rolled
    back when the class ends: the conftest's people and agents, made the
    same way. Building it took 1.0-1.4 s a test, and the flush after each
    transactional test about as much again."""
    with django_db_blocker.unblock(), override_settings(**NO_LIMITS), transaction.atomic():
        reviewer = get_user_model().objects.create_superuser("rita", "rita@example.com", "a-long-password-1")
        actions.claim_unowned_spaces(reviewer, actor=actions.SystemActor("tests"))
        agent, _ = actions.create_agent(
            "claude-code", spaces=["personal", "team"], actor=reviewer, source_tool="claude-code"
        )
        team_agent, _ = actions.create_agent("team-bot", spaces=["team"], actor=reviewer)
        yield build_world(reviewer, agent, team_agent)
        transaction.set_rollback(True)


def add_hidden(w) -> None:
    """Everything team-bot may not see: other spaces, other agents'
    proposals, withheld team records."""
    other, diary, reviewer = w["other"], w["diary"], w["reviewer"]
    today = timezone.localdate()
    # A look-alike personal space: the team records' own words, and more.
    for n, fields in enumerate([*VISIBLE[:6], PERSONAL_LOOKALIKE]):
        text = {**fields, "title": f"{fields['title']} (mine {n})", "body": fields["body"] + " Billing billing."}
        approve(diary, reviewer, space="personal", **text)
    for n in range(70):  # enough to fill every candidate pool of the old design
        approve(
            diary,
            reviewer,
            space="personal",
            kind="fact",
            title=f"Billing billing note {n}",
            tags=["billing"],
            body=f"Billing billing billing invoice export number {n}: alpha alpha bravo ledger reconciliation.",
        )
    personal = list(Record.objects.filter(space="personal").order_by("pk")[:3])
    for record, fixed in zip(personal, PERSONAL_IDS, strict=True):
        Record.objects.filter(pk=record.pk).update(public_id=fixed)
    w["hidden_text"] += ["mine 0", "Billing billing note", "(mine"]
    # Other agents' pending proposals, in team and in personal.
    actions.propose_create(
        agent=other,
        reason=REASON,
        **team(**{**NEAR_OTHERS, "body": NEAR_OTHERS["body"].replace("three times", "3 times")}),
    )
    actions.propose_create(agent=other, reason=REASON, **team(**EXACT_OTHERS))
    actions.propose_create(
        agent=diary,
        reason=REASON,
        space="personal",
        kind="fact",
        title="Private billing plan",
        tags=["billing"],
        body="My private billing plan is to pay every invoice export in January.",
    )
    actions.propose_retirement(w["visible"][1], agent=other, reason="The exports were replaced by an API")
    w["hidden_text"] += ["3 times", "Private billing plan"]

    # Withheld team records, each mentioning the battery's words.
    def withheld(title, body):
        record = approve(other, reviewer, **team(kind="fact", title=title, tags=["billing"], body=body))
        w["hidden_withheld"].append(record.public_id)
        return record

    edited = withheld("Billing export bucket", "Billing invoice exports used the old bucket in the ledger account.")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE reviews_record SET body = %s WHERE id = %s",
            ["Zebra quantum walrus: billing secrets nobody reviewed.", edited.pk],
        )
    overdue = withheld(OVERDUE_COPY["title"], OVERDUE_COPY["body"])
    Record.objects.filter(pk=overdue.pk).update(review_by=today - timedelta(days=3))
    expired = withheld("Old billing alpha", "The old billing alpha bravo charlie rota ended last year.")
    Record.objects.filter(pk=expired.pk).update(valid_until=today - timedelta(days=1))
    disputed = withheld("Billing deploy freeze", "Billing deploys freeze during the ledger reconciliation week.")
    actions.dispute_record(disputed, agent=other, reason="The freeze was lifted in spring")
    retired = withheld("Billing fax line", "Billing questions used to go to the fax line in the ledger office.")
    actions.retire_record(retired, actor=reviewer, note="No fax any more")
    moved = withheld("Billing bonus plan", "The billing team bonus plan pays out after the nightly export audit.")
    actions.move_record(moved, actor=reviewer, space="personal", note="This was private after all")
    w["hidden_text"] += [
        "Zebra",
        "nobody reviewed",
        "bonus plan",
        "fax line",
        "freeze",
        "Old billing alpha",
        "Billing export bucket",
        "This was private",
        "old bucket",
    ]


def change_hidden(w) -> None:
    other, diary, reviewer = w["other"], w["diary"], w["reviewer"]
    approve(
        diary,
        reviewer,
        space="personal",
        kind="procedure",
        title="Billing billing deploy alpha",
        tags=["billing", "deploy"],
        body="Billing billing deploy alpha bravo charlie invoice export ledger nightly.",
    )
    pending = Proposal.objects.filter(agent=diary, state=ProposalState.PENDING).first()
    actions.accept_proposal(pending, actor=reviewer)
    edited = Record.objects.get(public_id=w["hidden_withheld"][0])
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE reviews_record SET body = %s, title = %s WHERE id = %s",
            ["Billing deploy alpha acme/billing-api ACME-4711 nightly ledger.", "Billing deploy alpha", edited.pk],
        )
    actions.propose_create(
        agent=other,
        reason=REASON,
        **team(
            kind="fact",
            title="Billing invoice export alpha",
            tags=["billing"],
            body="Billing invoice export alpha bravo charlie happens nightly for the ledger.",
        ),
    )


# --------------------------------------------------------------------------- the battery


def battery_calls(w) -> list[tuple[str, dict]]:
    """(tool, arguments) pairs, in order; the writes come last."""
    calls: list[tuple[str, dict]] = [("describe", {})]
    for query in QUERIES:
        for mode in MODES:
            for extra in FILTERS:
                calls.append(("search", {"query": query, "mode": mode, **extra}))
    visible_ids = [r.public_id for r in w["visible"]]
    for record_id in [*visible_ids, *PERSONAL_IDS, "rec_0123456789ab"]:
        calls.append(("read", {"id": record_id}))
    calls += [
        ("list", {}),
        ("list", {"kind": "fact"}),
        ("list", {"space": "team"}),
        ("list", {"tag": "billing"}),
        ("list", {"since": "2020-01-01", "limit": 3}),
        ("quality_check", {}),
        ("quality_check", {"space": "team"}),
        ("proposal_status", {"id": w["own"].public_id}),
        ("proposal_status", {"id": "prop_0123456789ab"}),
    ]
    # Error texts.
    calls += [
        ("search", {"query": "billing", "mode": "hybrid", "space": "personal"}),
        ("read", {"id": "rec_nothex"}),
        ("list", {"space": "personal"}),
        ("quality_check", {"space": "personal"}),
        ("propose_context", {**PERSONAL_LOOKALIKE, "space": "personal", "reason": REASON}),
    ]
    # Proposals: near and exact copies of what it may or may not see.
    calls += [
        ("propose_context", {**team(**NEAR_OTHERS), "reason": REASON}),
        ("propose_context", {**team(**EXACT_OTHERS), "reason": REASON}),
        ("propose_context", {**team(**OVERDUE_COPY), "reason": REASON}),
        ("propose_context", {**team(**PERSONAL_LOOKALIKE), "reason": REASON}),
        (
            "propose_context",
            {
                **team(**{**OWN_PENDING, "body": OWN_PENDING["body"].replace("two people", "2 people")}),
                "reason": REASON,
            },
        ),
        ("propose_context", {**team(**VISIBLE[1]), "reason": REASON}),
        (
            "propose_context",
            {
                **team(**VISIBLE[0]),
                "revises": visible_ids[0],
                "body": VISIBLE[0]["body"] + " Hotfixes are exempt.",
                "reason": REASON,
            },
        ),
        ("propose_retirement", {"id": visible_ids[1], "reason": "The exports were replaced by an API"}),
    ]
    return calls


REST = {
    "describe": lambda a: ("get", "/api/v1/describe", None),
    "search": lambda a: (
        "get",
        "/api/v1/search",
        {
            "q": a["query"],
            "mode": a["mode"],
            **{k: (",".join(v) if k == "tags" else v) for k, v in a.items() if k not in ("query", "mode")},
        },
    ),
    "read": lambda a: ("get", f"/api/v1/records/{a['id']}", None),
    "list": lambda a: ("get", "/api/v1/records", a),
    "quality_check": lambda a: ("get", "/api/v1/quality", a),
    "proposal_status": lambda a: ("get", f"/api/v1/proposals/{a['id']}", None),
    "propose_context": lambda a: ("post", "/api/v1/proposals", a),
    "propose_retirement": lambda a: ("post", f"/api/v1/records/{a['id']}/retirement", {"reason": a["reason"]}),
}


def run_rest(w) -> list:
    client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {w['token']}")
    answers = []
    for tool, arguments in battery_calls(w):
        method, path, data = REST[tool](arguments)
        if method == "get":
            response = client.get(path, data or {})
        else:
            response = client.post(path, json.dumps(data), content_type="application/json")
        answers.append((tool, response.status_code, response.json()))
    return answers


async def _lifespan(app):
    """Start the MCP session manager as `serve` does (lifespan events)."""
    messages: asyncio.Queue = asyncio.Queue()
    started = asyncio.Event()

    async def receive():
        return await messages.get()

    async def send(message):
        if message["type"] == "lifespan.startup.complete":
            started.set()

    await messages.put({"type": "lifespan.startup"})
    task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send))
    await started.wait()
    return messages, task


def run_mcp(w) -> list:
    """The battery through the official MCP client against the daemon's own
    ASGI application (guard, SDK, tools), in process."""
    from memory_site.asgi import build_application

    app = build_application()

    async def go():
        messages, task = await _lifespan(app)
        try:
            async with httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app),
                base_url="http://127.0.0.1",
                headers={"Authorization": f"Bearer {w['token']}"},
            ) as http:
                async with Client(streamable_http_client("http://127.0.0.1/mcp", http_client=http)) as client:
                    answers = []
                    for tool, arguments in battery_calls(w):
                        result = await client.call_tool(tool, arguments)
                        text = "".join(getattr(block, "text", "") for block in result.content)
                        answers.append(
                            (tool, "error", text) if result.is_error else (tool, "ok", result.structured_content)
                        )
                    return answers
        finally:
            await messages.put({"type": "lifespan.shutdown"})
            await task

    return asyncio.run(go())


CHANNELS = {"rest": run_rest, "mcp": run_mcp}


def battery(w, channel: str) -> dict:
    """One channel's answers; afterwards the battery's own proposals are
    withdrawn so the next run starts from the same state."""
    before = set(Proposal.objects.values_list("public_id", flat=True))
    answers = {channel: CHANNELS[channel](w)}
    _withdraw_new(w, before)
    agent_api.write_limiter.reset()
    agent_api.read_limiter.reset()
    return answers


def _withdraw_new(w, before) -> None:
    for proposal in Proposal.objects.filter(agent=w["me"], state=ProposalState.PENDING).exclude(public_id__in=before):
        actions.withdraw_proposal(proposal, agent=w["me"])


# --------------------------------------------------------------------------- comparing


_NEW_PROPOSAL = re.compile(r"prop_[0-9a-f]{12}")


def normalised(answers: dict, w, *, withheld: bool) -> dict:
    """Drop what is measured (took_ms) and what is the battery's own doing
    (its new proposals' ids and times); with ``withheld=False`` also what
    the agent may know of withheld records in its own spaces: search's
    withheld counts, and quality findings that name only those records."""
    known = {w["own"].public_id}
    names: dict[str, str] = {}

    def fix_ids(text: str) -> str:
        def name(match):
            found = match.group(0)
            if found in known or found == "prop_0123456789ab":
                return found
            return names.setdefault(found, f"prop_new{len(names)}")

        return _NEW_PROPOSAL.sub(name, text)

    def clean(tool, data):
        if isinstance(data, str):
            return fix_ids(data)
        data = json.loads(fix_ids(json.dumps(data)))
        if tool == "search" and "results" in data:
            data.pop("took_ms", None)
            if not withheld:
                for key in ("withheld", "withheld_total", "withheld_explained"):
                    data.pop(key, None)
        if "proposal" in data and isinstance(data["proposal"], dict):
            data["proposal"]["created_at"] = "<time>"
        if tool == "quality_check" and "findings" in data and not withheld:
            hidden = set(w["hidden_withheld"])
            kept = []
            for finding in data["findings"]:
                if finding["records"] and set(finding["records"]) <= hidden and not finding["proposals"]:
                    continue  # allowed: a withheld record of its own space, by id
                kept.append(finding)
            data["findings"] = kept
            counts: dict[str, int] = {}
            for finding in kept:
                counts[finding["kind"]] = counts.get(finding["kind"], 0) + 1
            for kind, more in data["omitted"].items():
                counts[kind] = counts.get(kind, 0) + more
            data["counts"] = counts
        return data

    return {
        channel: [(tool, status, clean(tool, data)) for tool, status, data in rows] for channel, rows in answers.items()
    }


def assert_same(first: dict, second: dict) -> None:
    for channel in first:
        assert len(first[channel]) == len(second[channel])
        for a, b in zip(first[channel], second[channel], strict=True):
            assert a == b, f"{channel}: {json.dumps(a)[:300]}\n!=\n{json.dumps(b)[:300]}"


def assert_clean(answers: dict, w) -> None:
    text = json.dumps(answers, ensure_ascii=False)
    for secret in w["hidden_text"]:
        assert secret not in text, secret
    for hidden_id in w["hidden_withheld"]:
        for finding_text in re.findall(r'"why": "([^"]*' + hidden_id + r'[^"]*)"', text):
            assert "'" not in finding_text, finding_text  # by id only, never a title


# One test per channel: the same three batteries through REST and through MCP.
# Together they took 40-45 s, the inner loop's slowest test but one; as two
# tests the parallel workers share them.
@pytest.mark.django_db(transaction=True)  # the MCP tools run in worker threads: they see only committed rows
@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_nothing_the_agent_may_not_see_changes_any_answer(world, channel):
    w = world
    first = battery(w, channel)
    add_hidden(w)
    second = battery(w, channel)
    assert_clean(second, w)
    assert_same(normalised(first, w, withheld=False), normalised(second, w, withheld=False))

    change_hidden(w)
    third = battery(w, channel)
    assert_clean(third, w)
    assert_same(normalised(second, w, withheld=True), normalised(third, w, withheld=True))

    # The withheld counts that did appear are about what was approved in team.
    reader = Reader.for_agent(w["me"])
    counted = search_module.search("billing invoice export ledger", mode="keyword", reader=reader, limit=50)
    assert counted.withheld and set(counted.withheld) <= {
        "edited",
        "overdue",
        "expired",
        "disputed",
        "retired",
        "superseded",
    }
    never_approved = search_module.search("zebra quantum walrus", mode="keyword", reader=reader)
    assert never_approved.results == [] and never_approved.withheld == {}


# --------------------------------------------------------------------------- the work done


def _search_sql(w, query: str, mode: str) -> tuple[list[str], dict]:
    reader = Reader.for_agent(w["me"])
    with CaptureQueriesContext(connection) as captured:
        response = search_module.search(query, mode=mode, reader=reader, limit=3, count_access=False)
    return [q["sql"] for q in captured.captured_queries], response.as_dict()


@pytest.mark.django_db
@pytest.mark.xdist_group("no-oracle-work")  # one worker builds the class's data (`--dist loadgroup`)
class TestTheWorkDone:
    """Candidate pools are drawn from the reader's spaces only: a full
    look-alike personal space (which once filled the first pool and made
    the over-fetch loop run again) changes neither the results nor the SQL."""

    @pytest.fixture(scope="class")
    @classmethod
    def before_and_after(cls, shared_world, django_db_blocker):
        """Each mode's search (its SQL and answer) over the visible world;
        then the look-alike space is filled, once for the three modes (80
        records and 80 proposals through the actions took 4-9 s a mode)."""
        w = shared_world
        before = {}
        with django_db_blocker.unblock():
            for mode in MODES:
                _search_sql(w, "billing invoice export", mode)  # warm: caches filled, index synced
                before[mode] = _search_sql(w, "billing invoice export", mode)
            # Inside the class's transaction nothing commits: run the hooks a
            # commit runs (the index brought up to date, as the daemon does
            # after each write), or the first search after would do that work.
            with TestCase.captureOnCommitCallbacks(execute=True):
                for n in range(80):
                    approve(
                        w["diary"],
                        w["reviewer"],
                        space="personal",
                        kind="fact",
                        title=f"Billing billing invoice {n}",
                        tags=["billing"],
                        body=f"Billing billing invoice export billing invoice export, item {n}.",
                    )
                    actions.propose_create(
                        agent=w["other"],
                        reason=REASON,
                        **team(
                            kind="fact",
                            title=f"Billing invoice export idea {n}",
                            tags=["billing"],
                            body=f"Billing invoice export idea number {n} for the nightly ledger run.",
                        ),
                    )
        return w, before

    @pytest.mark.parametrize("mode", MODES)
    def test_a_search_does_the_same_work_whatever_exists_in_other_spaces(self, before_and_after, mode):
        w, before = before_and_after
        after = _search_sql(w, "billing invoice export", mode)
        assert after[1] == before[mode][1]
        assert after[0] == before[mode][0]


# --------------------------------------------------------------------------- each finding on its own


def _scores(agent, query: str, mode: str) -> dict[str, float]:
    answer = agent_api.search(agent, query, mode=mode, limit=20)
    return {hit["id"]: hit["score"] for hit in answer["results"]}


@pytest.mark.django_db
@pytest.mark.xdist_group("no-oracle-findings")  # one worker builds the class's world (`--dist loadgroup`)
class TestEachFindingOnItsOwn:
    """Each test writes only inside its own savepoint, over one shared world."""

    @pytest.fixture
    def world(self, shared_world):
        return shared_world

    @pytest.mark.parametrize("mode", ["keyword", "hybrid"])  # (semantic scores use no statistics)
    def test_scores_do_not_depend_on_another_space(self, world, mode):
        """Three symmetric team records score alike for "alpha bravo charlie",
        whatever a personal record says about one of the words."""
        me, w = world["me"], world
        before = _scores(me, "alpha bravo charlie", mode)
        billing_before = _scores(me, "billing", mode)
        approve(
            w["diary"],
            w["reviewer"],
            space="personal",
            kind="fact",
            title="Alpha alpha alpha",
            tags=["words"],
            body="Alpha alpha alpha alpha: my own notes about the word alpha and billing billing.",
        )
        assert _scores(me, "alpha bravo charlie", mode) == before
        assert _scores(me, "billing", mode) == billing_before

    @pytest.mark.parametrize("mode", ["keyword", "hybrid"])
    def test_scores_do_not_depend_on_withheld_records_in_the_same_space(self, world, mode):
        me, w = world["me"], world
        before = _scores(me, "alpha bravo charlie", mode)
        record = approve(
            w["other"],
            w["reviewer"],
            **team(
                kind="fact",
                title="Alpha alpha alpha",
                tags=["words"],
                body="Alpha alpha alpha alpha: the word alpha, again.",
            ),
        )
        Record.objects.filter(pk=record.pk).update(review_by=timezone.localdate() - timedelta(days=1))
        assert _scores(me, "alpha bravo charlie", mode) == before

    def test_words_only_in_an_out_of_band_edit_are_not_counted_as_withheld(self, world):
        me, w = world["me"], world
        record = approve(
            w["other"],
            w["reviewer"],
            **team(
                kind="fact",
                title="Parking permits",
                tags=["office"],
                body="Parking permits are renewed at the office on floor two.",
            ),
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE reviews_record SET body = %s WHERE id = %s",
                ["Parking permits now go to the zeppelin desk.", record.pk],
            )
        for mode in ("keyword", "hybrid"):
            assert agent_api.search(me, "zeppelin desk", mode=mode)["withheld"] == {}, mode
        # Semantic mode ranks everything; the new words weigh no more than words in neither text.
        assert (
            agent_api.search(me, "zeppelin desk", mode="semantic")["withheld"]
            == agent_api.search(me, "marmalade xylophone", mode="semantic")["withheld"]
        )
        assert agent_api.search(me, "parking permits floor", mode="keyword")["withheld"] == {"edited": 1}

    def test_a_near_duplicate_of_another_agents_proposal_is_stored_without_a_word_about_it(self, world):
        me, w = world["me"], world
        actions.propose_create(agent=w["other"], reason=REASON, **team(**NEAR_OTHERS))
        near = {**team(**NEAR_OTHERS), "body": NEAR_OTHERS["body"].replace("three times", "3 times")}
        answer = agent_api.propose_context(me, reason=REASON, **near)
        assert answer["status"] == "pending"
        assert answer["message"].startswith("Stored as a pending proposal.")  # the ordinary answer
        actions.propose_create(agent=w["other"], reason=REASON, **team(**EXACT_OTHERS))
        exact = agent_api.propose_context(me, reason=REASON, **team(**EXACT_OTHERS))
        assert exact["status"] == "pending"  # an identical copy: stored too, the reviewer sees both

    def test_a_near_duplicate_of_its_own_proposal_names_it(self, world):
        me, w = world["me"], world
        near = {**team(**OWN_PENDING), "body": OWN_PENDING["body"].replace("two people", "2 people")}
        answer = agent_api.propose_context(me, reason=REASON, **near)
        assert answer["status"] == "similar_exists"
        assert [s["id"] for s in answer["similar"]] == [w["own"].public_id]

    def test_a_retirement_another_agent_asked_for_is_not_named(self, world):
        me, w = world["me"], world
        actions.propose_retirement(w["visible"][1], agent=w["other"], reason="The exports were replaced")
        answer = agent_api.propose_retirement(me, w["visible"][1].public_id, "The exports were replaced by an API")
        assert answer["status"] == "pending"

    def test_quality_check_gives_an_agent_no_title_of_a_withheld_record_nor_others_proposals(self, world):
        me, w = world["me"], world
        edited = approve(
            w["other"],
            w["reviewer"],
            **team(
                kind="fact",
                title="Parking permits",
                tags=["office"],
                body="Parking permits are renewed at the office on floor two.",
            ),
        )
        with connection.cursor() as cursor:
            cursor.execute("UPDATE reviews_record SET title = %s WHERE id = %s", ["Zeppelin desk secrets", edited.pk])
        overdue = approve(
            w["other"],
            w["reviewer"],
            **team(
                kind="fact",
                title="Visitor badges",
                tags=["office"],
                body="Visitor badges are printed at the front desk.",
            ),
        )
        Record.objects.filter(pk=overdue.pk).update(review_by=timezone.localdate() - timedelta(days=1))
        old = actions.propose_create(agent=w["other"], reason=REASON, **team(**NEAR_OTHERS))
        Proposal.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=30))

        text = json.dumps(agent_api.quality_check(me))

        for secret in (
            "Zeppelin",
            "Parking permits",
            "Visitor badges",
            NEAR_OTHERS["title"],
            old.public_id,
            "claude-code",
        ):
            assert secret not in text, secret
        assert edited.public_id in text and overdue.public_id in text  # by id only

    def test_describe_counts_only_the_agents_own_pending_proposals(self, world):
        me, w = world["me"], world
        before = agent_api.describe(me)
        actions.propose_create(agent=w["other"], reason=REASON, **team(**NEAR_OTHERS))
        assert agent_api.describe(me) == before
