"""GET /health: anyone learns that Vetted is up and its version, nothing it
holds; the counts, the model and the index queue are the operator's (an
active superuser's session). `serve` recognises a running Vetted by the
answer anyone gets."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from common import __version__, listening
from reviews import actions

pytestmark = pytest.mark.django_db

PUBLIC = {"status": "ok", "service": "vetted", "version": __version__}


@pytest.fixture
def busy(make_record, create_proposal):
    make_record()
    create_proposal(1)


def answer(client, **headers):
    response = client.get("/health", **headers)
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    return response.json()


def test_without_credentials_health_says_only_up_and_the_version(client, busy):
    assert answer(client) == PUBLIC


def test_an_agent_token_does_not_open_the_counts(client, busy, reviewer):
    _agent, token = actions.create_agent("probe", spaces=["team"], actor=reviewer)
    assert answer(client, HTTP_AUTHORIZATION=f"Bearer {token}") == PUBLIC


def test_a_reviewer_who_is_not_the_operator_gets_the_short_answer(client, busy, django_user_model, reviewer):
    staff = django_user_model.objects.create_user("nora", "nora@example.com", "a-long-password-3", is_staff=True)
    actions.add_member("team", staff, role="reviewer", actor=actions.SystemActor("tests"))
    client.force_login(staff)
    assert answer(client) == PUBLIC


def test_a_deactivated_superuser_gets_the_short_answer(client, busy, reviewer):
    client.force_login(reviewer)
    type(reviewer).objects.filter(pk=reviewer.pk).update(is_active=False)
    assert answer(client) == PUBLIC


def test_the_operator_sees_the_counts(client, busy, reviewer):
    client.force_login(reviewer)
    data = answer(client)
    assert {key: data[key] for key in PUBLIC} == PUBLIC
    assert data["records"] == {"approved": 1, "overdue": 0, "disputed": 0, "total": 1}
    assert data["pending_proposals"] == 1 and "index_queue" in data and data["model"]["configured"]


@pytest.fixture
def answering():
    """A tiny HTTP server that answers /health with a given body."""
    body: dict[str, object] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            payload = json.dumps(body["value"]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", body
    finally:
        server.shutdown()
        server.server_close()


def test_serve_recognises_a_running_vetted_by_what_anyone_is_answered(client, answering):
    url, body = answering
    body["value"] = client.get("/health").json()
    assert listening.vetted_answers(url)
    body["value"] = {"status": "ok", "version": "1.0"}  # some other program's health check
    assert not listening.vetted_answers(url)
