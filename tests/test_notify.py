"""Notifications: the outbox the actions write, batching, the channels
(webhook to a real HTTP receiver on loopback, email to a real SMTP server,
the Atom feed read by a real feed parser), retries, hostile titles, the
settings page and the live inbox's poll."""

from __future__ import annotations

import email
import hashlib
import hmac
import re
from datetime import timedelta
from email import policy

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common import logscrub
from mcp_bridge.agent_api.limits import SlidingWindowLimiter
from notify import channels, live, refusals, sender
from notify.models import Channel, Delivery, DeliveryState, Event, FeedKey, OutboxEvent
from retrieval import approved_content
from reviews import actions
from reviews.errors import DuplicateContent, RateLimited
from reviews.models import AuditEvent, Record
from tests.conftest import content
from tests.notify_support import Receiver

pytestmark = pytest.mark.django_db
SECRET = "s3cret-for-tests"
HOSTILE = (
    "Line one\nline two\r\n<script>alert(1)</script> **bold** _it_ [x](http://evil.example) "
    "<!channel> <@U123> @everyone `code` ``` &amp; \u202eevil\u200b" + "A" * 10_000
)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The live counts are cached per process; each test starts without them."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


@pytest.fixture
def webhook(settings, receiver):
    settings.VETTED_WEBHOOK_URL = receiver.url
    settings.VETTED_WEBHOOK_SECRET = SECRET
    settings.VETTED_WEBHOOK_FORMAT = "json"
    settings.VETTED_NOTIFY_EMAIL = []
    settings.VETTED_NOTIFY_MIN_SECONDS = 60
    settings.VETTED_NOTIFY_QUIET_SECONDS = 1.0
    settings.VETTED_PUBLIC_URL = "https://vetted.example"
    return receiver


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def body(n: int) -> str:
    return f"Body {n}: the deploy pipeline for service number {n} runs nightly and reports to the ops channel."


def propose(agent, n: int = 0, **overrides):
    return actions.propose_create(
        agent=agent, reason="Seen in the repository", **content(title=f"Proposal number {n}", body=body(n), **overrides)
    )


# --------------------------------------------------------------------------- the outbox


def test_a_proposal_writes_its_outbox_row_in_the_same_transaction(agent):
    proposal = propose(agent)
    row = OutboxEvent.objects.get()
    assert (row.event, row.subject_id, row.title, row.agent, row.action, row.space) == (
        Event.PROPOSAL_CREATED,
        proposal.public_id,
        "Proposal number 0",
        "claude-code",
        "create",
        "team",
    )
    with pytest.raises(RuntimeError), transaction.atomic():
        propose(agent, 1)
        raise RuntimeError("the caller's transaction rolls back")
    assert OutboxEvent.objects.count() == 1  # rolled back with the proposal


def test_a_refused_proposal_writes_no_outbox_row(agent):
    propose(agent)
    with pytest.raises(DuplicateContent):
        propose(agent)
    assert OutboxEvent.objects.count() == 1


def test_disputes_are_told_with_the_approved_title_and_a_burst_once(agent, make_record):
    records = [make_record(title=f"Approved title {n}", body=body(100 + n)) for n in range(4)]
    OutboxEvent.objects.all().delete()
    Record.objects.filter(pk=records[0].pk).update(title="Edited outside, never reviewed")
    for r in records:
        actions.dispute_record(r, agent=agent, reason="This is wrong now")
    disputes = OutboxEvent.objects.filter(event=Event.DISPUTE_CREATED, action="dispute")
    assert [d.title for d in disputes] == [f"Approved title {n}" for n in range(4)]
    bursts = OutboxEvent.objects.filter(action="dispute_burst")
    assert bursts.count() == 1
    assert "claude-code disputed 3 records" in bursts.get().title


def test_the_daily_scan_tells_each_due_and_changed_record_once(make_record):
    due, edited, fine = (make_record(title=f"Record {n}", body=body(200 + n)) for n in range(3))
    Record.objects.filter(pk=due.pk).update(review_by=timezone.localdate() - timedelta(days=1))
    Record.objects.filter(pk=edited.pk).update(body="Changed in the database by hand, nobody reviewed this.")
    OutboxEvent.objects.all().delete()
    result = actions.scan_for_notices()
    assert (result.due, result.changed_outside) == ([due.public_id], [edited.public_id])
    rows = {(r.event, r.subject_id) for r in OutboxEvent.objects.all()}
    assert rows == {(Event.RECORD_DUE, due.public_id), (Event.RECORD_CHANGED_OUTSIDE, edited.public_id)}
    assert OutboxEvent.objects.get(subject_id=edited.public_id).title == "Record 1"  # the approved title
    assert not AuditEvent.objects.filter(event_type__startswith="notify.").exists()  # looking changes nothing
    again = actions.scan_for_notices()
    assert (again.due, again.changed_outside) == ([], [])
    assert OutboxEvent.objects.count() == 2
    assert fine.public_id not in {r.subject_id for r in OutboxEvent.objects.all()}


def test_the_index_sync_tells_a_record_changed_outside(make_record):
    record = make_record()
    approved_content.reconcile()
    OutboxEvent.objects.all().delete()
    Record.objects.filter(pk=record.pk).update(title="Edited behind Vetted's back")
    approved_content.reconcile()
    row = OutboxEvent.objects.get()
    assert (row.event, row.subject_id, row.title) == (
        Event.RECORD_CHANGED_OUTSIDE,
        record.public_id,
        "Billing API repository",
    )
    approved_content.reconcile()
    actions.scan_for_notices()  # the scan finds the same fact: told once
    assert OutboxEvent.objects.count() == 1


def test_rate_limit_refusals_cost_no_database_write_and_are_summarised(settings, webhook, agent):
    settings.VETTED_READS_PER_MINUTE = 1
    refusals.take()
    limiter = SlidingWindowLimiter("VETTED_READS_PER_MINUTE", "make", "reads")
    limiter.hit(agent, now=1.0)
    with pytest.raises(RateLimited):  # on PostgreSQL the first refusal reads the shared window
        limiter.hit(agent, now=2.0)
    with CaptureQueriesContext(connection) as queries:
        for t in range(1, 20):
            with pytest.raises(RateLimited):
                limiter.hit(agent, now=2.0 + t / 100)
    assert len(queries) == 0
    (made,) = sender.batch(later(2))
    assert made.payload["items"] == [
        {"id": "", "title": "20 call(s) refused by a rate limit", "agent": "claude-code", "action": "rate_limited"}
    ]
    assert OutboxEvent.objects.count() == 0


# --------------------------------------------------------------------------- batching


def test_a_burst_of_50_proposals_is_one_message(webhook, agent, team_agent):
    for n in range(50):
        propose(agent if n % 2 else team_agent, n)
    assert sender.batch(timezone.now()) == []  # the burst may still be arriving
    (made,) = sender.batch(later(2))
    assert made.event == Event.PROPOSAL_CREATED
    assert made.payload["summary"] == "50 new proposals from 2 agents"
    assert len(made.payload["items"]) == 50
    sender.send_due(later(3))
    assert len(webhook.got) == 1
    assert len(webhook.got[0].json()["items"]) == 50
    assert sender.batch(later(3)) == []


def test_messages_are_spaced_by_the_minimum_but_disputes_go_at_once(webhook, agent, make_record):
    record = make_record()
    propose(agent, 0)
    assert len(sender.batch(later(2))) == 1
    propose(agent, 1)
    assert sender.batch(later(5)) == []  # within VETTED_NOTIFY_MIN_SECONDS of the last message
    dispute = actions.dispute_record(record, agent=agent, reason="This is wrong now")
    (made,) = sender.batch(later(6))
    assert made.event == Event.DISPUTE_CREATED
    assert [i["id"] for i in made.payload["items"]] == [dispute.public_id]
    (made,) = sender.batch(later(62))
    assert made.payload["summary"] == "1 new proposal from 1 agent"


def test_only_the_configured_spaces_are_reported(settings, webhook, agent):
    settings.VETTED_NOTIFY_SPACES = ["system"]
    propose(agent, 1, space="team")
    assert sender.batch(later(2)) == []
    settings.VETTED_NOTIFY_SPACES = ["system", "team"]
    propose(agent, 2, space="team")
    (made,) = sender.batch(later(2))
    assert [i["title"] for i in made.payload["items"]] == ["Proposal number 2"]


def test_a_personal_space_is_told_by_default_to_its_owner_only(settings, webhook, agent, second_reviewer):
    # rita owns the personal space; sam reviews team and system; ops is an address of no account.
    settings.VETTED_NOTIFY_EMAIL = ["rita@example.com", "sam@example.com", "ops@example.com"]
    propose(agent, 1, space="personal")
    (made,) = sender.batch(later(2))
    assert made.channel == Channel.EMAIL and made.payload["to"] == ["rita@example.com"]
    assert [i["title"] for i in made.payload["items"]] == ["Proposal number 1"]
    # Listing personal spaces does not hand their titles to the operator's channels either.
    settings.VETTED_NOTIFY_SPACES = ["personal", "team"]
    propose(agent, 2, space="personal")
    propose(agent, 3, space="team")
    deliveries = sender.batch(later(70))
    told = {(d.channel, tuple(d.payload.get("to", ()))): [i["title"] for i in d.payload["items"]] for d in deliveries}
    assert told[(Channel.WEBHOOK, ())] == ["Proposal number 3"]
    assert told[(Channel.EMAIL, ("rita@example.com",))] == ["Proposal number 2", "Proposal number 3"]
    assert told[(Channel.EMAIL, ("sam@example.com", "ops@example.com"))] == ["Proposal number 3"]


def test_a_proposal_decided_before_it_was_told_is_dropped(webhook, agent, reviewer):
    proposal = propose(agent)
    actions.accept_proposal(proposal, actor=reviewer)
    assert sender.batch(later(2)) == []
    assert OutboxEvent.objects.get().batched_at is not None


# --------------------------------------------------------------------------- webhook


def test_the_webhook_gets_the_json_body_signed_with_its_delivery_id(webhook, agent):
    proposal = propose(agent)
    (made,) = sender.batch(later(2))
    result = sender.send_due(later(3))
    assert result.sent == [made.public_id]
    (got,) = webhook.got
    body = got.json()
    assert body == {
        "id": made.public_id,
        "event": "proposal.created",
        "created_at": body["created_at"],
        "inbox_url": "https://vetted.example/",
        "items": [{"id": proposal.public_id, "title": "Proposal number 0", "agent": "claude-code", "action": "create"}],
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", body["created_at"])
    assert got.headers["x-vetted-delivery"] == made.public_id
    expected = hmac.new(SECRET.encode(), got.body, hashlib.sha256).hexdigest()
    assert got.headers["x-vetted-signature"] == f"sha256={expected}"
    assert Delivery.objects.get().state == DeliveryState.SENT


def test_a_receiver_down_then_up_gets_the_message_once_after_the_retry(webhook, agent):
    webhook.stop()
    propose(agent)
    (made,) = sender.batch(later(2))
    result = sender.send_due(later(2))
    assert result.retrying == [made.public_id]
    made.refresh_from_db()
    assert (made.state, made.attempts) == (DeliveryState.PENDING, 1)
    assert "could not be reached" in made.last_error
    assert made.next_attempt_at > timezone.now() + timedelta(seconds=5)
    assert sender.send_due(later(5)).sent == []  # not before its backoff ends
    webhook.start()
    assert sender.send_due(later(30)).sent == [made.public_id]
    assert len(webhook.got) == 1 and list(webhook.unique()) == [made.public_id]
    made.refresh_from_db()
    assert (made.state, made.attempts, made.last_error) == (DeliveryState.SENT, 2, "")


def test_a_message_that_fails_for_a_day_is_marked_failed_with_its_last_error(webhook, agent):
    webhook.status = 500
    propose(agent)
    (made,) = sender.batch(later(2))
    Delivery.objects.filter(pk=made.pk).update(created_at=timezone.now() - sender.RETRY_FOR)
    assert sender.send_due(later(3)).failed == [made.public_id]
    made.refresh_from_db()
    assert (made.state, made.last_error) == (DeliveryState.FAILED, "the webhook answered HTTP 500")


def test_backoff_doubles_up_to_an_hour():
    assert [sender.backoff(n).total_seconds() for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert sender.backoff(30).total_seconds() == 3600


def test_a_claim_of_a_sender_that_no_longer_runs_is_released(webhook, agent):
    propose(agent)
    (made,) = sender.batch(later(2))
    Delivery.objects.filter(pk=made.pk).update(
        claimed_by=f"{sender.socket.gethostname()}:999999:dead", claimed_until=later(600)
    )
    assert sender.send_due(later(3)).sent == []  # someone holds it
    assert sender.release_dead_claims() == 1
    assert sender.send_due(later(3)).sent == [made.public_id]


# --------------------------------------------------------------------------- hostile titles, each format


def hostile_payload():
    return {
        "event": "proposal.created",
        "created_at": "2026-12-01T00:00:00Z",
        "summary": "1 new proposal from 1 agent",
        "items": [{"id": "prop_0123456789ab", "title": HOSTILE, "agent": "evil\nagent", "action": "create"}],
    }


def test_hostile_titles_are_one_short_inert_line_in_json(settings):
    settings.VETTED_WEBHOOK_SECRET = ""
    raw, _headers = channels.webhook_request("dlv_x", hostile_payload(), "json")
    import json

    title = json.loads(raw)["items"][0]["title"]
    assert len(title) <= channels.TITLE_CUT and "\n" not in title and "\r" not in title
    assert "\u202e" not in title and "\u200b" not in title
    assert len(raw) < 1000


def test_hostile_titles_are_plain_text_in_ntfy():
    raw, headers = channels.webhook_request("dlv_x", hostile_payload(), "ntfy")
    text = raw.decode()
    assert text.count("\n") == 0  # one item, one line
    assert "X-Markdown" not in headers and "Markdown" not in headers
    assert all(v.isascii() and "\n" not in v for v in headers.values())
    assert headers["Title"] == "1 new proposal from 1 agent"
    assert len(text) < 300


def test_hostile_titles_cannot_mention_link_or_format_in_slack():
    import json

    raw, _ = channels.webhook_request("dlv_x", hostile_payload(), "slack")
    text = json.loads(raw)["text"]
    item = text.splitlines()[1]
    assert "<!channel>" not in text and "<@U123>" not in text and "<script>" not in text
    assert "&lt;!channel&gt;" in item
    # The title is one code span: exactly two backticks around it, none inside.
    title_span = item.split(": ", 1)[1].split(" by ")[0]
    assert title_span.startswith("`") and title_span.endswith("`") and title_span.count("`") == 2
    assert len(text.splitlines()) == 2


def test_hostile_titles_are_escaped_in_the_email(settings):
    settings.VETTED_NOTIFY_EMAIL = ["rita@example.com"]
    message = channels.email_message("dlv_x", hostile_payload())
    html = str(message.alternatives[0][0])
    assert "<script>" not in html and "&lt;script&gt;" in html
    item_lines = [line for line in message.body.splitlines() if line.startswith("- create")]
    assert len(item_lines) == 1 and len(item_lines[0]) < 200
    assert "\n" not in message.subject


# --------------------------------------------------------------------------- email (a real SMTP server)


@pytest.fixture
def smtp(settings):
    from aiosmtpd.controller import Controller

    from mcp_bridge.daemon_process import free_port

    class Keep:
        def __init__(self):
            self.messages = []

        async def handle_DATA(self, server, session, envelope):
            self.messages.append(envelope)
            return "250 OK"

    handler = Keep()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.VETTED_NOTIFY_EMAIL = ["rita@example.com", "sam@example.com"]
    settings.VETTED_WEBHOOK_URL = ""
    settings.VETTED_PUBLIC_URL = "https://vetted.example"
    yield handler
    controller.stop()


def test_the_email_digest_reaches_a_real_smtp_server_as_text_and_html(smtp, agent, make_record):
    record = make_record()
    sender.batch(later(2))
    smtp.messages.clear()
    Delivery.objects.all().delete()
    propose(agent, 1)
    actions.dispute_record(record, agent=agent, reason="This is wrong now")
    (made,) = sender.batch(later(2))
    assert sender.send_due(later(3)).sent == [made.public_id]
    (envelope,) = smtp.messages
    assert sorted(envelope.rcpt_tos) == ["rita@example.com", "sam@example.com"]
    message = email.message_from_bytes(envelope.content, policy=policy.default)
    assert message["Subject"] == "Vetted: 1 new proposal from 1 agent, 1 dispute"
    assert message["X-Vetted-Delivery"] == made.public_id
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    for part in (text, html):
        assert "Proposal number 1" in part and "Billing API repository" in part and "claude-code" in part
        assert "https://vetted.example/" in part
        assert "Body 1" not in part  # titles only, never a body


# --------------------------------------------------------------------------- the feed (a real feed parser)


def test_the_feed_lists_pending_proposals_and_disputes_at_a_secret_url(client, settings, reviewer, agent, make_record):
    import feedparser

    settings.VETTED_PUBLIC_URL = "https://vetted.example"
    record = make_record()
    propose(agent, 1)
    propose(agent, 2, space="personal")
    actions.dispute_record(record, agent=agent, reason="a secret reason")
    key = actions.rotate_feed_key(actor=reviewer)
    response = client.get(f"/feed/atom?key={key.secret}")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/atom+xml")
    feed = feedparser.parse(response.content)
    assert not feed.bozo, feed.bozo_exception
    titles = sorted(entry.title for entry in feed.entries)
    # rita's own personal space is in her feed (her channel) by default.
    assert titles == ["Dispute: Billing API repository", "New: Proposal number 1", "New: Proposal number 2"]
    assert all(entry.author == "claude-code" for entry in feed.entries)
    page = response.content.decode()
    assert "Body 1" not in page and "a secret reason" not in page
    old = key.secret
    actions.rotate_feed_key(actor=reviewer)
    assert client.get(f"/feed/atom?key={old}").status_code == 404
    assert client.get("/feed/atom?key=guess").status_code == 404
    assert client.get("/feed/atom").status_code == 404


def test_the_feed_key_never_reaches_a_log_line():
    line = logscrub.scrub('127.0.0.1:50000 - "GET /feed/atom?key=Zm9vYmFyYmF6cXV4 HTTP/1.1" 200')
    assert "Zm9vYmFyYmF6cXV4" not in line and "key=[redacted]" in line


# --------------------------------------------------------------------------- the settings page


def test_the_settings_page_shows_deliveries_and_sends_a_test(client, webhook, reviewer, agent):
    client.force_login(reviewer)
    webhook.status = 503
    propose(agent)
    sender.batch(later(2))
    sender.send_due(later(3))
    page = client.get("/settings/").content.decode()
    made = Delivery.objects.get()
    assert f'id="delivery-{made.public_id}"' in page
    assert "the webhook answered HTTP 503" in page and "pending" in page
    assert 'id="notify-test-webhook"' in page
    webhook.status = 200
    response = client.post("/settings/notify/test", {"channel": "webhook"}, follow=True)
    assert "Sent a test webhook" in response.content.decode()
    assert webhook.got[-1].json()["items"][0]["action"] == "test"
    response = client.post("/settings/notify/test", {"channel": "email"}, follow=True)
    assert "not configured" in response.content.decode()


def test_only_the_operator_may_send_a_test_notification(client, webhook, reviewer, django_user_model):
    """A reviewer who is not a superuser neither sees the button nor can post
    text into the operator's webhook or mailbox."""
    staff = django_user_model.objects.create_user("nora", "nora@example.com", "a-long-password-3", is_staff=True)
    actions.add_member("team", staff, role="reviewer", actor=actions.SystemActor("tests"))
    client.force_login(staff)
    assert 'id="notify-test-webhook"' not in client.get("/settings/").content.decode()
    response = client.post("/settings/notify/test", {"channel": "webhook"})
    assert response.status_code == 403 and "Only the operator" in response.content.decode()
    assert webhook.got == []


def test_the_settings_page_makes_and_rotates_the_feed_url(client, reviewer):
    client.force_login(reviewer)
    assert "Make my feed URL" in client.get("/settings/").content.decode()
    client.post("/settings/notify/feed")
    key = FeedKey.objects.get(user=reviewer)
    assert f"/feed/atom?key={key.secret}" in client.get("/settings/").content.decode()
    client.post("/settings/notify/feed")
    assert FeedKey.objects.get(user=reviewer).secret != key.secret
    assert AuditEvent.objects.filter(event_type="feed_key.rotated").count() == 2
    assert not any(key.secret in str(e.extra) for e in AuditEvent.objects.all())


# --------------------------------------------------------------------------- the live inbox


def test_the_live_poll_shows_new_proposals_counts_and_title(client, reviewer, agent):
    client.force_login(reviewer)
    propose(agent, 1)
    page = client.get("/").content.decode()
    since = re.search(r"inbox/live\?since=(\d+)", page).group(1)
    quiet = client.get(f"/inbox/live?since={since}").content.decode()
    assert "show them" not in quiet
    propose(agent, 2)
    propose(agent, 3)
    from django.core.cache import cache

    cache.clear()
    poll = client.get(f"/inbox/live?since={since}").content.decode()
    assert "2 new proposals, show them" in poll
    assert '<span class="count" hx-swap-oob="true" id="pending-count">3</span>' in poll
    assert "<title>(2 new) Inbox (3) · Vetted</title>" in poll


def test_show_them_keeps_the_filters_of_the_inbox_that_is_open(client, reviewer, agent):
    client.force_login(reviewer)
    propose(agent, 1)
    filtered = "http://testserver/?action=create&sort=newest"
    poll = client.get("/inbox/live?since=0", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=filtered).content.decode()
    assert 'href="/?action=create&amp;sort=newest">1 new proposal, show them' in poll
    # Any other page (or none named) leads to the plain inbox.
    other = client.get("/inbox/live?since=0", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/due/")
    assert 'href="/">1 new proposal, show them' in other.content.decode()


def test_a_live_poll_costs_at_most_one_query_beyond_the_session(client, reviewer, agent):
    client.force_login(reviewer)
    propose(agent, 1)
    client.get("/inbox/live?since=0")  # fills the shared cache
    newest = live.newest_pending()
    with CaptureQueriesContext(connection) as nothing_new:
        client.get(f"/inbox/live?since={newest}")
    with CaptureQueriesContext(connection) as something_new:
        client.get("/inbox/live?since=0")
    own = [q["sql"] for q in something_new.captured_queries if "reviews_proposal" in q["sql"]]
    assert len(own) == 1
    assert not any("reviews_proposal" in q["sql"] for q in nothing_new.captured_queries), nothing_new.captured_queries
    assert len(nothing_new) <= 2  # the session and the user, as any signed-in request


def test_the_live_poll_needs_a_reviewer(client):
    assert client.get("/inbox/live").status_code in (302, 403)


def test_the_notify_command_sends_what_is_pending_once(webhook, agent):
    from io import StringIO

    from django.core.management import call_command

    propose(agent)
    OutboxEvent.objects.update(created_at=timezone.now() - timedelta(seconds=5))
    out = StringIO()
    call_command("notify", "--once", stdout=out)
    assert out.getvalue().strip() == "made 1 message(s), sent 1, retrying 0, failed 0"
    assert len(webhook.got) == 1
    call_command("notify", "--once", stdout=StringIO())
    assert len(webhook.got) == 1


def test_told_events_and_finished_messages_are_forgotten_after_30_days(webhook, agent):
    propose(agent)
    (made,) = sender.batch(later(2))
    sender.send_due(later(3))
    assert sender.prune(later(3)) == 0
    assert sender.prune(timezone.now() + timedelta(days=31)) == 2
    assert not OutboxEvent.objects.exists() and not Delivery.objects.exists()
