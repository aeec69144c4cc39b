"""Schemathesis against the REST API's own OpenAPI schema, on the real daemon.

Every operation in /api/v1/schema is called with generated input (valid and
invalid), once with a valid agent token and once with none. Schemathesis's
default checks apply: no 5xx, only documented status codes and content
types, bodies that match the documented schemas, invalid input refused with
4xx, valid input accepted, and no answer without authentication. Path ids
are drawn partly from records and proposals that exist, so the success
paths are reached too, not only 404s.
"""

from __future__ import annotations

import json
from functools import partial

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from reviews import actions
from reviews.models import Agent
from tests.conftest import content
from tests.gateway_support import http, running_daemon

# The django_db mark tells pytest-django to create the test database: it cannot
# see the fixtures of schemathesis's lazily generated tests at collection.
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FUZZ = settings(
    max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)

EXCLUDED = [schemathesis.checks.positive_data_acceptance]

# Fewer examples, valid input only: enough to reach every success path.
REACH = settings(
    max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)

TOKEN: dict[str, str | None] = {"value": None}
# Ids that exist, filled by the ``seeded`` fixture before each operation's run.
KNOWN: dict[str, list[str]] = {"record_id": [], "proposal_id": []}


def _schema_document() -> dict:
    """The OpenAPI document, generated in-process exactly as /api/v1/schema serves
    it (test_the_daemon_serves_the_schema_under_test checks that it is the same).
    Loading it eagerly gives one test per operation; schemathesis's lazy
    from_fixture loader does not work with pytest 9 (it sets Node._nodeid)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


schema = schemathesis.openapi.from_dict(_schema_document())


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """Often replace a generated id with one that exists."""
    choices = []
    for name, known in KNOWN.items():
        if name in (path_parameters or {}) and known:
            choices.append(st.sampled_from(known).map(partial(_with, path_parameters, name)))
    return st.one_of(*choices, st.just(path_parameters))


def _with(parameters: dict, name: str, value: str) -> dict:
    return {**parameters, name: value}


@schema.auth(refresh_interval=None)
class AgentToken:
    """The bearer token, when the test sets one (schemathesis then knows the
    request is authenticated, and still drops it in its auth checks)."""

    def get(self, case, context):
        return TOKEN["value"]

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture
def token():
    yield TOKEN
    TOKEN["value"] = None


@pytest.fixture(scope="module")
def fuzz_gateway(django_db_setup, django_db_blocker, tmp_path_factory):
    """The real daemon, without the rate limits (a fuzzer calls faster than
    any agent; the limits themselves are tested in test_agent_limits)."""
    with running_daemon(
        tmp_path_factory.mktemp("fuzz-daemon"),
        VETTED_PROPOSALS_PER_MINUTE="0",
        VETTED_READS_PER_MINUTE="0",
        VETTED_OPEN_DISPUTES_PER_AGENT="0",
    ) as daemon:
        yield daemon


@pytest.fixture
def seeded(agent_tokens, reviewer):
    """Committed data the daemon can serve: approved records in the token's
    spaces, a disputed one, a superseded one, one moved out of its sight,
    a pending proposal and a rejected one."""
    agent = Agent.objects.get(name="claude-code")
    records = []
    for n, space in enumerate(["team", "personal", "team", "team", "personal", "team"]):
        proposal = actions.propose_create(
            agent=agent,
            reason="Seen in the handbook",
            **content(
                space=space,
                title=f"Fuzz seed record {n}",
                body=f"The fuzz seed number {n} says the billing API deploys from main at {n + 9} o'clock.",
            ),
        )
        records.append(actions.accept_proposal(proposal, actor=reviewer).result_record)
    actions.dispute_record(records[2], agent=agent, reason="It deploys later now")
    pending = actions.propose_retirement(records[1], agent=agent, reason="Nobody uses this anymore")
    rejected = actions.propose_create(
        agent=agent,
        reason="A guess",
        **content(title="Rejected fuzz idea", body="The rejected idea was to deploy the billing API on Sundays only."),
    )
    actions.reject_proposal(rejected, actor=reviewer, note="Not true")
    # A superseded record (read answers "withheld" with the current version) and
    # one moved to a space the agent cannot see (it must answer 404, like an unknown id).
    records.append(actions.revise_record(records[3], actor=reviewer, changes={"title": "Fuzz seed record revised"}))
    actions.move_record(records[5], actor=reviewer, space="system", note="Belongs to the system space")
    KNOWN["record_id"] = [r.public_id for r in records]
    KNOWN["proposal_id"] = [pending.public_id, rejected.public_id]
    yield agent_tokens
    KNOWN["record_id"], KNOWN["proposal_id"] = [], []


def test_the_daemon_serves_the_schema_under_test(fuzz_gateway):
    status, _headers, served = http("GET", f"{fuzz_gateway.base}/api/v1/schema?format=json")
    assert status == 200
    assert served == _schema_document()


@schema.parametrize()
@FUZZ
def test_api_with_a_valid_token_answers_as_documented(case, fuzz_gateway, seeded, token):
    token["value"] = seeded["claude-code"]
    case.call_and_validate(base_url=fuzz_gateway.base, excluded_checks=EXCLUDED)


@schema.parametrize()
@FUZZ
def test_api_without_a_token_answers_as_documented(case, fuzz_gateway, seeded, token):
    token["value"] = None
    response = case.call_and_validate(base_url=fuzz_gateway.base, excluded_checks=EXCLUDED)
    assert response.status_code == 401, response.text


def test_fuzzing_with_a_token_reaches_every_operations_success_path(fuzz_gateway, seeded):
    """Guards the fuzzing itself: with the seeded ids (the same path hook as
    above) and valid generated input, every operation answers 2xx at least
    once, not only 4xx. It runs its own generation, so it holds alone too."""
    headers = {"Authorization": f"Bearer {seeded['claude-code']}"}
    missed, operations = {}, [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:
        statuses = _statuses_of(operation, fuzz_gateway.base, headers)
        if not any(200 <= code < 300 for code in statuses):
            missed[operation.label] = sorted(statuses)
    assert not missed, f"operations that never succeeded: {missed}"


def _statuses_of(operation, base_url: str, headers: dict) -> set[int]:
    """The status codes ``operation`` answers to generated valid input."""
    statuses: set[int] = set()

    @REACH
    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    def reach(case):
        statuses.add(case.call(base_url=base_url, headers=headers).status_code)

    reach()
    return statuses
