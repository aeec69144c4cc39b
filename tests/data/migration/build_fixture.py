# ruff: noqa  (a one-off script, run with the code of main at e4b4632: cd <checkout of e4b4632> && VETTED_HOME=... VETTED_DB_PATH=main-e4b4632.sqlite3 VETTED_EMBEDDER=fake python build_fixture.py)
"""Builds tests/data/main-e4b4632.sqlite3 with the code of main at e4b4632."""

import os, django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
django.setup()
from django.core.management import call_command

call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from reviews import actions

U = get_user_model()
alice = U.objects.create_superuser("alice", "alice@example.com", "a-long-password-1")
bob = U.objects.create_user("bob", "bob@example.com", "a-long-password-2", is_staff=True)
pa, _ = actions.create_agent("alice-laptop", scopes=["personal", "team"], actor=alice, source_tool="claude-code")  # type: ignore[call-arg]  # e4b4632 code
ta, _ = actions.create_agent("team-bot", scopes=["team", "system"], actor=alice)  # type: ignore[call-arg]  # e4b4632 code
BODY = " It is written down here so that every agent reading this memory knows it."


def make(agent, reviewer, scope, title, body, tags):
    p = actions.propose_create(
        agent=agent, reason="seen today", kind="fact", scope=scope, title=title, body=body + BODY, tags=tags
    )
    return actions.accept_proposal(p, actor=reviewer).result_record


r1 = make(pa, alice, "personal", "Alice dentist", "Alice sees the dentist every March.", ["health"])
r2 = make(pa, alice, "personal", "Alice café note", "Alice's café on Rue Émile serves oat milk.", ["food"])
r3 = make(ta, bob, "team", "Deploy window", "The billing API deploys on Tuesdays at 10:00 UTC.", ["deploy"])
r4 = make(ta, alice, "team", "Review rule", "Every pull request needs one approving review.", ["review"])
r5 = make(ta, alice, "system", "Backup policy", "The database is backed up nightly at 02:00.", ["ops"])
actions.revise_record(r4, actor=alice, changes={"body": "Every pull request needs two approving reviews." + BODY})
actions.dispute_record(r3, agent=ta, reason="It moved to Wednesday.")
actions.propose_retirement(r1, agent=pa, reason="No longer true.") if hasattr(actions, "propose_retirement") else None
p = actions.propose_create(
    agent=pa,
    reason="pending",
    kind="fact",
    scope="personal",
    title="Alice pending",
    body="Alice likes tea in the afternoon." + BODY,
    tags=[],
)
p2 = actions.propose_create(
    agent=ta,
    reason="rejected",
    kind="fact",
    scope="team",
    title="Wrong fact",
    body="The office is closed on Mondays." + BODY,
    tags=[],
)
actions.reject_proposal(p2, actor=bob, note="Not true.")
actions.retire_record(r5, actor=alice, note="Replaced by the ops runbook.")
gone, _ = actions.create_agent("gone-bot", scopes=["team"], actor=alice)  # type: ignore[call-arg]  # e4b4632 code
actions.revoke_agent(gone, actor=alice)
from reviews.models import Record, Proposal, Agent, AuditEvent

print(Record.objects.count(), Proposal.objects.count(), Agent.objects.count(), AuditEvent.objects.count())
