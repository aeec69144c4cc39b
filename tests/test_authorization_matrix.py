"""Who may do what, over the real daemon: every URL x every kind of caller x
GET and POST, with the expected status of each cell written out below.
Who may change what in which space (every person's change x every role x
every space kind, read from the policy's table) is the in-process matrix,
tests/test_permission_matrix.py.

Callers:
  anon       no credentials
  personal   agent token with spaces personal+team (claude-code)
  team       agent token with space team (team-bot)
  revoked    a revoked agent's token (gone)
  user       session cookie of a signed-in account that is not staff
  staff      session cookie of a staff account that is not a superuser (an owner of team)
  super      session cookie of the reviewer (rita, a staff superuser)

Every POST to the site carries a valid CSRF cookie and header, so a refusal
is about who is asking, not about CSRF (test_site_posts_without_a_csrf_token_are_refused
checks the CSRF policy separately). REST POSTs send ``{}`` (a withdrawal a
note that is not text): an authorised agent gets 400 (invalid), anyone else
401, so no cell creates anything.
"""

from __future__ import annotations

import http.client
import json
import secrets
import string
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from reviews import actions
from reviews.models import Agent, AuditEvent, Proposal, ProposalState, Record, RecordStatus
from tests.conftest import GOOD_BODY, content

pytestmark = pytest.mark.slow

REASON = "Seen in the team handbook today"
CALLERS = ("anon", "personal", "team", "revoked", "user", "staff", "super")
AGENT_CALLERS = {"personal": "claude-code", "team": "team-bot", "revoked": "gone"}

# --------------------------------------------------------------------------- the policy
#
# (name, path, GET statuses, POST statuses); statuses in CALLERS order:
#                         anon personal team revoked user staff super
# 302 = redirect to a login page; 401 = agent token required; 403 = refused;
# 405 = wrong method for someone who is allowed in.
# Path placeholders are filled from each caller's own set of targets.

# The policy reads as a table, one row a line: the formatter leaves it alone.
# fmt: off
SITE = [
    ("inbox", "/",                                       (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("due", "/due/",                                     (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("disputed", "/disputed/",                           (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("edited", "/edited/",                               (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("records", "/records/",                             (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    # as-of (issue 18 §2): the records as an agent saw them on a date (GET only).
    ("records as seen", "/records/as-seen/",             (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("record page", "/records/{r_view}/",                (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    # Without htmx the card redirects a reviewer to its place in the inbox.
    ("proposal card", "/proposals/{p_view}/",            (302, 302, 302, 302, 403, 302, 302), (302, 302, 302, 302, 403, 405, 405)),
    ("similar", "/proposals/{p_view}/similar",           (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("agents", "/agents/",                               (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("quality", "/quality/",                             (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("activity", "/activity/",                           (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    # Spaces: the list and a space's page (staff and super own team); the forms are tests/test_space_views.py's.
    ("spaces", "/spaces/",                               (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("space page", "/spaces/team/",                      (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("waiting for me", "/waiting/",                      (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("settings", "/settings/",                           (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("recent decisions", "/decisions/",                  (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    # Instruction-file upload: a POST without files is a 400 that changes nothing.
    ("import instructions", "/import/",                  (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 400, 400)),
    # notify: the live inbox's poll; the feed (its key is the only way in: none here, so 404 for all)
    ("live inbox poll", "/inbox/live",                   (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 405, 405)),
    ("feed without its key", "/feed/atom",               (404, 404, 404, 404, 404, 404, 404), (405, 405, 405, 405, 405, 405, 405)),
    ("feed with a wrong key", "/feed/atom?key=guess",    (404, 404, 404, 404, 404, 404, 404), (405, 405, 405, 405, 405, 405, 405)),
    ("setup (users exist)", "/setup/",                   (302, 302, 302, 302, 302, 302, 302), (302, 302, 302, 302, 302, 302, 302)),
    ("login page", "/accounts/login/",                   (200, 200, 200, 200, 200, 200, 200), (200, 200, 200, 200, 200, 200, 200)),
]
# The decisions. POST by staff/super really decides (checked in the DB).
SITE_ACTIONS = [
    ("accept", "/proposals/{p_accept}/accept",           (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("reject", "/proposals/{p_reject}/reject",           (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("revise proposal", "/proposals/{p_revise}/revise",  (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 302, 302)),
    ("bulk accept", "/proposals/bulk",                   (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("verify", "/records/{r_verify}/verify",             (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("retire", "/records/{r_retire}/retire",             (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("revise record", "/records/{r_revise}/revise",      (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 302, 302)),
    ("clear dispute", "/records/{r_disputed}/clear-dispute", (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("restore", "/records/{r_restore}/restore",          (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("approve current", "/records/{r_approve}/approve-current", (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    # Hints (inbox-hints): merge a create into a revision, reject as a duplicate.
    ("merge", "/proposals/{p_merge}/merge",              (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("reject duplicate", "/proposals/{p_dup}/reject-duplicate", (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    # Undo with no decision named: a message and back (what a reviewer may undo is tests/test_undo.py's).
    ("undo", "/decisions/undo",                          (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("create agent", "/agents/create",                   (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 200, 200)),
    # notify: send a test notification (none configured: a message, no send), make a new feed URL
    # Only the operator (a superuser) may send on the operator's channels.
    ("test notification", "/settings/notify/test",       (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 403, 302)),
    ("rotate feed key", "/settings/notify/feed",         (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    # An owner sets team's approval rule to the one it has: the action runs, changes nothing that matters.
    ("space approvals", "/spaces/team/approvals",        (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    # An owner makes an invitation link (shown once, in the 200).
    # GET: the open links (owners).
    ("space invite", "/spaces/team/invitations",         (302, 302, 302, 302, 403, 200, 200), (302, 302, 302, 302, 403, 200, 200)),
    # Revoke a link that does not exist: a message and back to the list.
    ("revoke invitation", "/spaces/team/invitations/999999/revoke", (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
    ("revoke agent", "/agents/{victim}/revoke",          (302, 302, 302, 302, 403, 405, 405), (302, 302, 302, 302, 403, 302, 302)),
]
# The admin: staff only; a staff account without model permissions sees an
# empty index; nobody can save a change form (records are read-only).
ADMIN = [
    ("admin index", "/admin/",                           (302, 302, 302, 302, 302, 200, 200), (302, 302, 302, 302, 302, 200, 200)),
    ("admin record change", "/admin/reviews/record/{r_pk}/change/",
                                                         (302, 302, 302, 302, 302, 403, 200), (302, 302, 302, 302, 302, 403, 403)),
    ("admin record delete", "/admin/reviews/record/{r_pk}/delete/",
                                                         (302, 302, 302, 302, 302, 403, 403), (302, 302, 302, 302, 302, 403, 403)),
]
# The agent gateway: bearer tokens only; no session cookie opens it.
AGENT_API = [
    ("describe", "/api/v1/describe",                     (401, 200, 200, 401, 401, 401, 401), (401, 405, 405, 401, 401, 401, 401)),
    ("search", "/api/v1/search?q=billing",               (401, 200, 200, 401, 401, 401, 401), (401, 405, 405, 401, 401, 401, 401)),
    ("list", "/api/v1/records",                          (401, 200, 200, 401, 401, 401, 401), (401, 405, 405, 401, 401, 401, 401)),
    ("read team record", "/api/v1/records/{r_view}",     (401, 200, 200, 401, 401, 401, 401), (401, 405, 405, 401, 401, 401, 401)),
    ("read personal record", "/api/v1/records/{r_personal}",
                                                         (401, 200, 404, 401, 401, 401, 401), (401, 405, 405, 401, 401, 401, 401)),
    ("dispute", "/api/v1/records/{r_view}/dispute",      (401, 405, 405, 401, 401, 401, 401), (401, 400, 400, 401, 401, 401, 401)),
    ("retirement", "/api/v1/records/{r_view}/retirement", (401, 405, 405, 401, 401, 401, 401), (401, 400, 400, 401, 401, 401, 401)),
    ("propose", "/api/v1/proposals",                     (401, 405, 405, 401, 401, 401, 401), (401, 400, 400, 401, 401, 401, 401)),
    ("proposal status (claude-code's)", "/api/v1/proposals/{p_view}",
                                                         (401, 200, 404, 401, 401, 401, 401), (401, 405, 405, 401, 401, 401, 401)),
    # Another agent's proposal is a 404, whatever it sends.
    ("withdrawal (claude-code's)", "/api/v1/proposals/{p_view}/withdrawal",
                                                         (401, 405, 405, 401, 401, 401, 401), (401, 400, 404, 401, 401, 401, 401)),
    ("quality", "/api/v1/quality",                       (401, 200, 200, 401, 401, 401, 401), (401, 405, 405, 401, 401, 401, 401)),
    ("unknown api path", "/api/v1/nothing",              (401, 404, 404, 401, 401, 401, 401), (401, 404, 404, 401, 401, 401, 401)),
    # Public by design: the schema and its docs say nothing about the data.
    ("openapi schema", "/api/v1/schema",                 (200, 200, 200, 200, 200, 200, 200), (405, 405, 405, 405, 405, 405, 405)),
    ("mcp", "/mcp",                                      (401, 400, 400, 401, 401, 401, 401), (401, 200, 200, 401, 401, 401, 401)),
    ("health", "/health",                                (200, 200, 200, 200, 200, 200, 200), (405, 405, 405, 405, 405, 405, 405)),
]
# fmt: on
MATRIX = SITE + SITE_ACTIONS + ADMIN + AGENT_API

MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "matrix", "version": "1"}},
}


# --------------------------------------------------------------------------- helpers


def csrf_secret() -> str:
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))


def session_cookie(user) -> str:
    """A real, committed login session for ``user`` (what the login form makes)."""
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    assert session.session_key is not None
    return session.session_key


def fetch(base: str, method: str, path: str, *, headers: dict | None = None, body: bytes | None = None):
    """One request, redirects not followed: (status, headers, text)."""
    target = urlsplit(base)
    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode("utf-8", "replace"),
        )
    finally:
        conn.close()


class Caller:
    def __init__(self, name: str, *, token: str | None = None, session: str | None = None):
        self.name, self.token, self.session = name, token, session
        self.csrf = csrf_secret()

    def headers(self, *, csrf: bool = True) -> dict:
        headers = {}
        cookies = []
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session:
            cookies.append(f"{settings.SESSION_COOKIE_NAME}={self.session}")
        if csrf:
            cookies.append(f"{settings.CSRF_COOKIE_NAME}={self.csrf}")
            headers["X-CSRFToken"] = self.csrf
        if cookies:
            headers["Cookie"] = "; ".join(cookies)
        return headers


def request_for(caller: Caller, method: str, path: str, form: dict | None = None, *, csrf: bool = True):
    """The headers and body a caller sends to ``path``: JSON for the agent
    gateway, a form for the site."""
    headers = caller.headers(csrf=csrf)
    body = None
    if path.startswith("/mcp"):
        headers["Accept"] = "application/json, text/event-stream"
        if method == "POST":
            body = json.dumps(MCP_INITIALIZE).encode()
            headers["Content-Type"] = "application/json"
    elif path.startswith("/api/") or path == "/health":
        if method == "POST":
            body, headers["Content-Type"] = json.dumps(form or {}).encode(), "application/json"
    elif method == "POST":
        body = urlencode(form or {}, doseq=True).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    return headers, body


def build_targets(reviewer, tag: str) -> dict:
    """One set of targets for the site's actions (each caller that may
    decide gets its own, so its decisions do not disturb another's cells)."""
    agent = Agent.objects.get(name="claude-code")

    def pending(n: str):
        return actions.propose_create(
            agent=agent,
            reason=REASON,
            **content(title=f"Pending {tag} {n}", body=f"{GOOD_BODY} The {tag} {n} proposal says so."),
        )

    def approved(n: str, **overrides):
        proposal = actions.propose_create(
            agent=agent,
            reason=REASON,
            **content(title=f"Approved {tag} {n}", body=f"{GOOD_BODY} The {tag} {n} record says so.", **overrides),
        )
        return actions.accept_proposal(proposal, actor=reviewer).result_record

    disputed = approved("disputed")
    actions.dispute_record(disputed, agent=agent, reason="The repository moved last week.")
    view = approved("view")
    edited = {name: approved(name) for name in ("restore", "approve")}
    for name, record in edited.items():  # changed outside Vetted
        Record.objects.filter(pk=record.pk).update(body=f"{GOOD_BODY} Changed by hand ({tag} {name}).")
    victim, _token = actions.create_agent(f"victim-{tag}", spaces=["team"], actor=reviewer)
    return {
        "p_view": pending("view").public_id,
        "p_accept": pending("accept").public_id,
        "p_reject": pending("reject").public_id,
        "p_revise": pending("revise").public_id,
        "p_bulk": pending("bulk").public_id,
        "p_merge": pending("merge").public_id,
        "r_merge": approved("merge").public_id,
        "p_dup": pending("dup").public_id,
        "r_view": view.public_id,
        "r_pk": view.pk,
        "r_verify": approved("verify").public_id,
        "r_retire": approved("retire").public_id,
        "r_revise": approved("revise").public_id,
        "r_disputed": disputed.public_id,
        "r_restore": edited["restore"].public_id,
        "r_approve": edited["approve"].public_id,
        "r_personal": approved("personal", space="personal").public_id,
        "victim": victim.name,
        "new_agent": f"made-by-{tag}",
    }


def forms(t: dict) -> dict:
    """What a reviewer's browser would post for each action."""
    tag = t["new_agent"]  # unique per set of targets: two revisions must not be duplicates
    revised = {
        "title": "Revised by the reviewer",
        "body": f"{GOOD_BODY} Checked with the team lead ({tag}).",
        "kind": "fact",
        "tags": "billing",
    }
    return {
        # After the confirm that names its flags (a plain-form accept of a flagged
        # proposal is held for it: tests/test_inbox_single_accept_flags.py).
        "accept": {"flagged_ok": [t["p_accept"]]},
        "reject": {"note": "Not true any more."},
        "revise proposal": {**revised, "space": "team"},
        "bulk accept": {"ids": [t["p_bulk"]], "op": "accept", "flagged_ok": [t["p_bulk"]]},
        "retire": {"note": "The service was shut down."},
        "revise record": {**revised, "title": "Revised record title"},
        "clear dispute": {"note": "Checked: it still holds."},
        "restore": {"note": "Edited in the database by mistake."},
        "approve current": {"note": "Checked: the new text is right."},
        "merge": {"target": t["r_merge"]},
        "reject duplicate": {"duplicate_of": t["r_view"]},
        "create agent": {"name": t["new_agent"], "spaces": ["team"]},
        "space approvals": {"required_approvals": "1"},
        "space invite": {"role": "reader"},
        "login page": {"username": "", "password": ""},
        "withdrawal (claude-code's)": {"note": ["not", "text"]},
    }


def snapshot() -> dict:
    """Everything a decision could change (last_seen/access counts aside)."""
    return {
        "proposals": sorted(Proposal.objects.values_list("public_id", "state", "decided_at", "result_record_id")),
        "records": sorted(
            Record.objects.values_list(
                "public_id",
                "status",
                "review_by",
                "verified_at",
                "approved_checksum",
                "title",
                "body",
                "superseded_by_id",
            )
        ),
        "agents": sorted(Agent.objects.values_list("name", "is_active", "token_digest", "spaces")),
        "audit": AuditEvent.objects.count(),
    }


def decided_as_expected(t: dict) -> list[str]:
    """What a reviewer's POSTs in the matrix must have done."""
    state = dict(Proposal.objects.values_list("public_id", "state"))
    status = dict(Record.objects.values_list("public_id", "status"))
    problems = []
    for key, want in (
        ("p_accept", ProposalState.ACCEPTED),
        ("p_reject", ProposalState.REJECTED),
        ("p_revise", ProposalState.ACCEPTED),
        ("p_bulk", ProposalState.ACCEPTED),
        ("p_dup", ProposalState.REJECTED),
    ):
        if state[t[key]] != want:
            problems.append(f"{key}: {state[t[key]]} (wanted {want})")
    for key, record_want in (
        ("r_retire", RecordStatus.RETIRED),
        ("r_revise", RecordStatus.SUPERSEDED),
        ("r_disputed", RecordStatus.APPROVED),
        ("r_approve", RecordStatus.SUPERSEDED),
    ):
        if status[t[key]] != record_want:
            problems.append(f"{key}: {status[t[key]]} (wanted {record_want})")
    if Proposal.objects.get(public_id=t["p_merge"]).target_id != Record.objects.get(public_id=t["r_merge"]).pk:
        problems.append("p_merge was not merged into r_merge")
    if Record.objects.get(public_id=t["r_restore"]).edited_since_approval:
        problems.append("r_restore was not restored")
    if Record.objects.get(public_id=t["r_verify"]).verified_at is None:
        problems.append("r_verify was not verified")
    if Agent.objects.get(name=t["victim"]).is_active:
        problems.append("victim agent was not revoked")
    if not Agent.objects.filter(name=t["new_agent"]).exists():
        problems.append("agent was not created")
    return problems


@pytest.fixture
def callers(agent_tokens, reviewer, django_user_model):
    user = django_user_model.objects.create_user("una", "una@example.com", "a-long-password-3")
    staff = django_user_model.objects.create_user("stan", "stan@example.com", "a-long-password-4", is_staff=True)
    # Spaces (issue 16): deciding needs a role in the space; stan co-owns team (the targets' space).
    actions.add_member("team", staff, role="owner", actor=reviewer)
    made = {"anon": Caller("anon")}
    for name, agent_name in AGENT_CALLERS.items():
        made[name] = Caller(name, token=agent_tokens[agent_name])
    made["user"] = Caller("user", session=session_cookie(user))
    made["staff"] = Caller("staff", session=session_cookie(staff))
    made["super"] = Caller("super", session=session_cookie(reviewer))
    return made


def run_cells(gateway, caller: Caller, targets: dict) -> list[str]:
    column = CALLERS.index(caller.name)
    bodies = forms(targets)
    mismatches = []
    for method, expected_at in (("GET", 2), ("POST", 3)):
        for row in MATRIX:
            name, template = row[0], row[1]
            path = template.format(**targets)
            headers, body = request_for(caller, method, path, bodies.get(name) if method == "POST" else None)
            status, response_headers, text = fetch(gateway.base, method, path, headers=headers, body=body)
            want = row[expected_at][column]
            if status != want:
                mismatches.append(
                    f"{method} {name} ({path}) as {caller.name}: {status}, expected {want}: {text[:120]!r}"
                )
            elif (
                status == 302
                and want == 302
                and caller.name in ("anon", *AGENT_CALLERS)
                and name not in ("setup (users exist)",)
            ):
                location = response_headers.get("location", "")
                if "login" not in location:
                    mismatches.append(f"{method} {name} as {caller.name}: redirected to {location!r}, not a login page")
            if status >= 500:
                mismatches.append(f"{method} {name} as {caller.name}: server error")
    return mismatches


# --------------------------------------------------------------------------- tests


def test_every_url_answers_each_caller_as_the_policy_table_says(gateway, callers, reviewer):
    shared = build_targets(reviewer, "shared")
    before = snapshot()
    mismatches = []
    for name in ("anon", "personal", "team", "revoked", "user"):
        mismatches += run_cells(gateway, callers[name], shared)
    after = snapshot()
    # Nobody in those columns changed anything (the whole matrix, both methods).
    assert after == before, "a caller who may not decide changed the database"

    for name in ("staff", "super"):
        targets = build_targets(reviewer, name)
        mismatches += run_cells(gateway, callers[name], targets)
        mismatches += [f"{name}: {problem}" for problem in decided_as_expected(targets)]
    assert not mismatches, "\n".join(mismatches)


def test_agent_tokens_change_nothing_through_any_site_or_admin_action(gateway, callers, reviewer):
    """Every way a browser could decide, tried with each agent token, with
    and without CSRF, as plain forms and as htmx requests: nothing changes."""
    targets = build_targets(reviewer, "agents")
    bodies = forms(targets)
    admin_actions = (
        [
            ("/admin/reviews/record/", {"action": action, "_selected_action": [targets["r_pk"]], "index": "0"})
            for action in ("verify_selected", "clear_dispute_selected", "retire_selected")
        ]
        + [
            (
                "/admin/reviews/proposal/",
                {
                    "action": action,
                    "_selected_action": [Proposal.objects.get(public_id=targets["p_accept"]).pk],
                    "index": "0",
                },
            )
            for action in ("accept_selected", "reject_selected")
        ]
        + [
            (
                "/admin/reviews/agent/",
                {
                    "action": "revoke_selected",
                    "_selected_action": [Agent.objects.get(name=targets["victim"]).pk],
                    "index": "0",
                },
            ),
            ("/admin/reviews/record/add/", {"title": "Forged", "body": GOOD_BODY}),
            (f"/admin/reviews/record/{targets['r_pk']}/change/", {"title": "Forged", "body": GOOD_BODY}),
            (f"/admin/reviews/record/{targets['r_pk']}/delete/", {"post": "yes"}),
        ]
    )
    before = snapshot()
    seen = []
    for name in AGENT_CALLERS:
        caller = callers[name]
        for row in SITE_ACTIONS:
            path = row[1].format(**targets)
            for csrf in (True, False):
                for htmx in (False, True):
                    headers, body = request_for(caller, "POST", path, bodies.get(row[0]), csrf=csrf)
                    if htmx:
                        headers["HX-Request"] = "true"
                    status, response_headers, _ = fetch(gateway.base, "POST", path, headers=headers, body=body)
                    seen.append(status)
                    # Refused: a login redirect (302, or htmx's 204 + HX-Redirect), or CSRF's 403.
                    if status == 204:
                        assert "login" in response_headers.get("hx-redirect", ""), (name, path)
                    else:
                        assert status in (302, 403), (name, path, csrf, htmx, status)
                        if status == 302:
                            assert "/accounts/login/" in response_headers["location"], (name, path)
        for path, form in admin_actions:
            headers, body = request_for(caller, "POST", path, form)
            status, response_headers, _ = fetch(gateway.base, "POST", path, headers=headers, body=body)
            assert status == 302 and "/admin/login/" in response_headers["location"], (name, path, status)
    assert snapshot() == before
    assert 302 in seen and 403 in seen  # both refusals were exercised


def test_site_posts_without_a_csrf_token_are_refused_even_for_the_reviewer(gateway, callers, reviewer):
    targets = build_targets(reviewer, "csrf")
    before = snapshot()
    reviewer_caller = callers["super"]
    for row in SITE_ACTIONS:
        path = row[1].format(**targets)
        headers, body = request_for(reviewer_caller, "POST", path, forms(targets).get(row[0]), csrf=False)
        status, _, text = fetch(gateway.base, "POST", path, headers=headers, body=body)
        assert status == 403 and "CSRF" in text, (path, status)
        # A CSRF cookie with a different header value is no better.
        headers, body = request_for(reviewer_caller, "POST", path, forms(targets).get(row[0]))
        headers["X-CSRFToken"] = csrf_secret()
        assert fetch(gateway.base, "POST", path, headers=headers, body=body)[0] == 403, path
    assert snapshot() == before


def test_session_cookies_never_authorise_the_agent_gateway(gateway, callers):
    """Even with a CSRF token and the reviewer's session, /api and /mcp want a
    bearer token: the answer names the missing token, and no tool runs."""
    before = snapshot()
    for name in ("user", "staff", "super"):
        caller = callers[name]
        for method, path in (
            ("GET", "/api/v1/describe"),
            ("POST", "/api/v1/proposals"),
            ("POST", "/mcp"),
            ("GET", "/mcp"),
        ):
            headers, body = request_for(caller, method, path)
            if path == "/api/v1/proposals":
                body = json.dumps({**content(), "reason": REASON}).encode()
            status, response_headers, text = fetch(gateway.base, method, path, headers=headers, body=body)
            assert status == 401, (name, method, path, status)
            assert json.loads(text)["message"].startswith("Missing agent token")
            assert response_headers["www-authenticate"].startswith("Bearer")
    assert snapshot() == before


def test_a_signed_in_account_that_is_not_staff_cannot_decide(gateway, callers, reviewer):
    targets = build_targets(reviewer, "plain")
    before = snapshot()
    caller = callers["user"]
    for row in SITE_ACTIONS:
        path = row[1].format(**targets)
        headers, body = request_for(caller, "POST", path, forms(targets).get(row[0]))
        status, _, text = fetch(gateway.base, "POST", path, headers=headers, body=body)
        assert status == 403 and "not a reviewer" in text, (path, status, text[:200])
    assert snapshot() == before


# /mcp with a foreign Host or Origin (DNS rebinding): the token guard answers
# first, so only a valid agent token reaches the SDK's check.
#              anon personal team revoked user staff super
FOREIGN = {
    "Host: evil.example.com": (401, 421, 421, 401, 401, 401, 401),
    "Origin: http://evil.example.com": (401, 403, 403, 401, 401, 401, 401),
    "Origin: null": (401, 403, 403, 401, 401, 401, 401),
    "Host: 127.0.0.1.evil.example.com": (401, 421, 421, 401, 401, 401, 401),
}


def test_mcp_refuses_a_foreign_host_or_origin_whoever_asks(gateway, callers):
    before = snapshot()
    mismatches = []
    for header, expected in FOREIGN.items():
        name, _, value = header.partition(": ")
        for caller_name, want in zip(CALLERS, expected, strict=True):
            headers, body = request_for(callers[caller_name], "POST", "/mcp")
            status, _, text = fetch(gateway.base, "POST", "/mcp", headers={**headers, name: value}, body=body)
            if status != want:
                mismatches.append(f"{header} as {caller_name}: {status}, expected {want}: {text[:100]!r}")
    assert not mismatches, "\n".join(mismatches)
    assert snapshot() == before
