"""describe: the live vocabulary, the write rules and what the agent may see."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import connection
from django.utils import timezone

from reviews import validation as v
from reviews.checksum import content_checksum
from reviews.models import SCOPES, Agent, Proposal, ProposalState, RecordStatus


def describe(agent: Agent) -> dict:
    """The live vocabulary an agent writes with, the write rules, and what it may see."""
    today = timezone.localdate()
    scopes = [s for s in SCOPES if s in agent.scopes]
    marks = ",".join(["%s"] * len(scopes)) or "NULL"
    # "Current" = approved, not past its review date, inside any validity
    # window, and unchanged since approval: exactly what search can deliver.
    # SQL counts the first three; the checksum pass below takes out records
    # edited out of band (rare, but search withholds them).
    current_sql = (
        f"status = %s AND scope IN ({marks}) AND review_by >= %s "
        "AND (valid_until IS NULL OR valid_until >= %s) AND (valid_from IS NULL OR valid_from <= %s)"
    )
    params = [RecordStatus.APPROVED, *scopes, today, today, today]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT scope, kind, COUNT(*) FROM reviews_record WHERE {current_sql} GROUP BY scope, kind", params)
        by_scope: dict[str, int] = {s: 0 for s in scopes}
        by_kind: dict[str, int] = {k: 0 for k in v.kinds()}
        for scope, kind, count in cursor.fetchall():
            by_scope[scope] = by_scope.get(scope, 0) + count
            by_kind[kind] = by_kind.get(kind, 0) + count
        cursor.execute(
            f"SELECT j.value, COUNT(*) FROM reviews_record, json_each(reviews_record.tags) j WHERE {current_sql} "
            "GROUP BY j.value ORDER BY COUNT(*) DESC, j.value LIMIT 200", params)
        tag_counts = dict(cursor.fetchall())
        cursor.execute(f"SELECT scope, kind, title, body, tags, approved_checksum FROM reviews_record WHERE {current_sql}",
                       params)
        while rows := cursor.fetchmany(1000):
            for scope, kind, title, body, tags_json, approved in rows:
                record_tags = json.loads(tags_json) if isinstance(tags_json, str) else tags_json
                if content_checksum(kind=kind, scope=scope, title=title, body=body, tags=record_tags) != approved:
                    by_scope[scope] -= 1
                    by_kind[kind] -= 1
                    for tag in record_tags:
                        if tag in tag_counts:
                            tag_counts[tag] -= 1
    tags = [{"name": name, "records": count}
            for name, count in sorted(tag_counts.items(), key=lambda item: (-item[1], item[0])) if count > 0]
    pending = Proposal.objects.filter(state=ProposalState.PENDING)
    return {
        "server": "Vetted",
        "about": ("A shared memory in which nothing becomes true until a person approves it. You can search, read, "
                  "list and describe; you can propose new records, revisions, retirements and disputes. A reviewer "
                  "decides; proposal_status tells you what they decided."),
        "agent": {"id": agent.public_id, "name": agent.name, "scopes": scopes, "source_tool": agent.source_tool},
        "scopes": [{"name": s, "records": by_scope.get(s, 0)} for s in scopes],
        "kinds": [{"name": k, "review_days": days, "records": by_kind.get(k, 0)} for k, days in v.kinds().items()],
        "tags": tags,
        "records_current": sum(by_scope.values()),
        "pending_proposals": {
            "yours": pending.filter(agent=agent).count(),
            "in_your_scopes": pending.filter(scope__in=scopes).count()
            + pending.filter(scope="", target__scope__in=scopes).count(),
        },
        "write_rules": {
            "title": f"{v.TITLE_MIN}-{v.TITLE_MAX} characters, one line",
            "body": f"{v.BODY_MIN}-{v.BODY_MAX} characters of Markdown; real text, no keyboard mashing",
            "kind": f"one of: {', '.join(v.kinds())}",
            "scope": f"one of your scopes: {', '.join(scopes)}",
            "tags": (f"at most {v.TAGS_MAX}, lowercase, each up to {v.TAG_MAX_LEN} characters of a-z 0-9 . _ / : + -; "
                     "reuse the tags listed above where they fit"),
            "reason": f"required, at least {v.REASON_MIN} characters: why this is worth keeping (the reviewer reads it)",
            "review_by": "optional future date (YYYY-MM-DD); default: today + the kind's review_days",
            "duplicates": ("an exact copy of an approved record or pending proposal is refused with its id; text "
                           f"with similarity >= {settings.VETTED_NEAR_DUPLICATE} to a current record in the same scope "
                           "is answered with similar_exists unless you pass confirm_duplicate=true or revise that record"),
            "rate_limit": (f"{settings.VETTED_PROPOSALS_PER_MINUTE} proposals per minute"
                           if settings.VETTED_PROPOSALS_PER_MINUTE else "none"),
        },
        "save": ("Durable facts, decisions, preferences and procedures that will still be true next month and that "
                 "another tool or session would need. Do not save secrets, credentials, guesses, transient task "
                 "state, or anything already returned by search (revise it instead)."),
    }
