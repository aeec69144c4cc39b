"""A deterministic synthetic memory for benchmarks: varied, realistic-looking
records (services, people, procedures, identifiers) and queries over them."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from django.utils import timezone

from retrieval.embeddings import Embedder

SERVICES = [
    "billing",
    "checkout",
    "ledger",
    "search",
    "auth",
    "payments",
    "inventory",
    "shipping",
    "reporting",
    "notifications",
    "catalog",
    "pricing",
    "fraud",
    "onboarding",
    "analytics",
    "gateway",
    "scheduler",
    "exports",
    "invoicing",
    "identity",
    "media",
    "recommendations",
    "support",
    "warehouse",
]
COMPONENTS = ["api", "worker", "web", "cron", "consumer", "proxy", "db", "cache", "queue", "frontend"]
TOOLS = [
    "postgres",
    "redis",
    "kafka",
    "terraform",
    "kubernetes",
    "helm",
    "grafana",
    "sentry",
    "datadog",
    "stripe",
    "sendgrid",
    "twilio",
    "cloudflare",
    "vault",
    "github actions",
    "argo",
    "celery",
    "nginx",
]
PEOPLE = ["Rita", "Sam", "Priya", "Jonas", "Mei", "Tomas", "Aisha", "Lucas", "Hana", "Omar"]
VERBS = ["deploys", "rotates", "migrates", "backs up", "restarts", "monitors", "scales", "reviews", "archives"]
TIMES = [
    "every weekday",
    "on Fridays",
    "before each release",
    "twice a month",
    "after every incident",
    "at 09:00 UTC",
    "during the freeze",
    "once a quarter",
    "on the first Monday",
]
REASONS = [
    "to keep latency under control",
    "because the vendor requires it",
    "after the outage in March",
    "so that audits pass",
    "to avoid data loss",
    "as agreed in the architecture review",
    "since the old cluster is retired",
    "to stay within the budget",
]
KINDS = ["fact", "procedure", "decision", "reference", "preference", "event"]


def _identifier(rng: random.Random, service: str, component: str) -> str:
    pick = rng.randrange(5)
    if pick == 0:
        return f"acme/{service}-{component}"
    if pick == 1:
        return f"ACME-{rng.randrange(1000, 99999)}"
    if pick == 2:
        return f"{rng.randrange(1, 40)}.{rng.randrange(0, 20)}.{rng.randrange(0, 30)}"
    if pick == 3:
        return f"{service.upper()}_{component.upper()}_{rng.choice(['URL', 'TOKEN', 'SECRET', 'TIMEOUT'])}"
    return f"{service}-{component}-{rng.randrange(1, 99):02d}.internal"


def make_record(rng: random.Random, n: int) -> dict[str, Any]:
    service, component, tool = rng.choice(SERVICES), rng.choice(COMPONENTS), rng.choice(TOOLS)
    person, verb, when, why = rng.choice(PEOPLE), rng.choice(VERBS), rng.choice(TIMES), rng.choice(REASONS)
    ident = _identifier(rng, service, component)
    kind = rng.choice(KINDS)
    what = rng.choice(["runbook", "note", "decision", "setup", "limits", "owner", "policy"])
    title = f"{service.title()} {component} {what} {n}"
    sentences = [
        f"The {service} {component} {verb} {when} using {tool}, {why}.",
        f"{person} owns it; the reference is {ident}.",
        f"Ask in #{service}-team before changing the {tool} settings of the {component}.",
        f"Record {n}: the {component} talks to {rng.choice(SERVICES)} "
        f"over {rng.choice(['HTTP', 'gRPC', 'Kafka', 'SQS'])}.",
        f"Limits: {rng.randrange(2, 500)} requests per second, {rng.randrange(1, 64)} GB of memory.",
    ]
    rng.shuffle(sentences)
    body = " ".join(sentences[: rng.randrange(2, 6)])
    if ident not in body:
        body += f" Identifier: {ident}."
    if rng.random() < 0.08:
        sections = [
            f"## {heading}\n\n" + " ".join(rng.choice(sentences) for _ in range(6))
            for heading in ("Context", "Steps", "Rollback", "Contacts")
        ]
        body = body + "\n\n" + "\n\n".join(sections)
    tags = sorted({service, tool.replace(" ", "-"), kind})
    return {
        "kind": kind,
        "space": "team" if rng.random() < 0.9 else "personal",
        "title": title,
        "body": body,
        "tags": tags,
        "ident": ident,
        "service": service,
        "component": component,
        "tool": tool,
        "review_by": timezone.localdate() + timedelta(days=rng.randrange(30, 400)),
    }


def make_queries(rng: random.Random, records: list[dict[str, Any]], count: int) -> list[str]:
    queries = []
    for _ in range(count):
        r = rng.choice(records)
        pick = rng.randrange(3)
        if pick == 0:
            queries.append(r["ident"])
        elif pick == 1:
            queries.append(f"{r['service']} {r['component']} {r['tool']}")
        else:
            queries.append(f"who owns the {r['service']} {r['component']} and how often is it deployed?")
    return queries


def populate_corpus(
    size: int, rng: random.Random, embedder: Embedder, *, embed: bool = True
) -> tuple[list[dict[str, Any]], float, float]:
    """Fill the current (scratch) database with ``size`` approved synthetic
    records and embed them (``embed=False``: leave them queued, for a caller
    that times the indexing itself). Returns the specs, insert seconds and
    total build seconds. Rows go in by bulk insert (a throwaway corpus; the
    SQL triggers still fill the keyword indexes and the vector queue)."""
    import sys
    import time

    from django.db import transaction
    from tqdm import tqdm

    from retrieval import index
    from reviews.checksum import content_checksum
    from reviews.models import Record

    from .scratch import scratch_reviewer

    reviewer = scratch_reviewer()
    now = timezone.now()
    specs = [make_record(rng, n) for n in range(size)]
    started = time.perf_counter()
    for start in tqdm(range(0, size, 2000), desc=f"insert {size}", file=sys.stderr, disable=None):
        batch = []
        for spec in specs[start : start + 2000]:
            content = {k: spec[k] for k in ("kind", "space", "title", "body", "tags")}
            batch.append(
                Record(
                    **content,
                    review_by=spec["review_by"],
                    approved_checksum=content_checksum(**content),
                    approved_content=content,
                    approved_at=now,
                    approved_by=reviewer,
                    verified_at=now,
                )
            )
        with transaction.atomic():
            Record.objects.bulk_create(batch)
    insert_s = time.perf_counter() - started
    if not embed:
        return specs, insert_s, insert_s
    with tqdm(total=size, desc=f"embed {size}", file=sys.stderr, disable=None) as bar:
        index.sync(embedder, batch=256, progress=bar.update)
    return specs, insert_s, time.perf_counter() - started
