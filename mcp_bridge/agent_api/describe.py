"""describe: the live vocabulary, the write rules and what the agent may see."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from reviews import validation as v
from reviews.checksum import content_checksum
from reviews.models import Agent, ProposalAction, ProposalState, Record
from reviews.space_access import space_slugs
from reviews.space_models import Space

from .grant import own_proposals
from .limits import initialize_limiter, read_limiter, write_limiter


def describe(agent: Agent) -> dict:
    """The live vocabulary an agent writes with, the write rules, and what it may see.

    Counts are of exactly what search can deliver to this agent (the
    domain's deliverable rule plus the checksum), and of its own pending
    proposals: nothing it may not see is counted."""
    read_limiter.hit(agent)
    today = timezone.localdate()
    spaces = [s for s in space_slugs() if s in agent.spaces]
    names = dict(Space.objects.filter(slug__in=spaces).values_list("slug", "name"))
    by_space: dict[str, int] = {s: 0 for s in spaces}
    by_kind: dict[str, int] = {k: 0 for k in v.kinds()}
    tag_counts: dict[str, int] = {}
    rows = Record.objects.deliverable(spaces, today).values_list(
        "space", "kind", "title", "body", "tags", "approved_checksum"
    )
    for space, kind, title, body, record_tags, approved in rows.iterator(chunk_size=1000):
        if content_checksum(kind=kind, space=space, title=title, body=body, tags=record_tags) != approved:
            continue  # edited out of band: search withholds it
        by_space[space] = by_space.get(space, 0) + 1
        by_kind[kind] = by_kind.get(kind, 0) + 1
        for tag in record_tags:
            tag_counts[tag] = tag_counts.get(tag, 0) + 1
    tags = [
        {"name": name, "records": count}
        for name, count in sorted(tag_counts.items(), key=lambda item: (-item[1], item[0]))[:200]
    ]
    # Only what this credential may see: a sign-in granted some spaces is not told of the others.
    pending = own_proposals(agent).filter(state=ProposalState.PENDING)
    dispute_cap = settings.VETTED_OPEN_DISPUTES_PER_AGENT
    open_disputes = pending.filter(action=ProposalAction.DISPUTE).count()
    return {
        "server": "Vetted",
        "about": (
            "A shared memory in which nothing becomes true until a person approves it. You can search, read, "
            "list and describe; you can propose new records, revisions, retirements and disputes. A reviewer "
            "decides; proposal_status tells you what they decided."
        ),
        "agent": {"id": agent.public_id, "name": agent.name, "spaces": spaces, "source_tool": agent.source_tool},
        # The agent's grants by slug and name; ``space`` fields take the slug.
        "spaces": [{"slug": s, "name": names.get(s, s), "records": by_space.get(s, 0)} for s in spaces],
        "kinds": [{"name": k, "review_days": days, "records": by_kind.get(k, 0)} for k, days in v.kinds().items()],
        "tags": tags,
        "records_current": sum(by_space.values()),
        "pending_proposals": {"yours": pending.count()},
        "write_rules": {
            "title": f"{v.TITLE_MIN}-{v.TITLE_MAX} characters, one line",
            "body": f"{v.BODY_MIN}-{v.BODY_MAX} characters of Markdown; real text, no keyboard mashing",
            "kind": f"one of: {', '.join(v.kinds())}",
            "space": f"one of your spaces: {', '.join(spaces)}",
            "tags": (
                f"at most {v.TAGS_MAX}, lowercase, each up to {v.TAG_MAX_LEN} characters of a-z 0-9 . _ / : + -; "
                "reuse the tags listed above where they fit"
            ),
            "reason": (
                f"required, at least {v.REASON_MIN} characters: why this is worth keeping (the reviewer reads it)"
            ),
            "text": (
                "every field is refused if it holds a character the reviewer cannot see: controls, bidi "
                "controls, zero-width and other format characters, TAG characters, fillers, variation "
                "selectors (ZWJ and VS16 stay allowed inside emoji); the error names each by code point "
                "and position"
            ),
            "review_by": "optional future date (YYYY-MM-DD); default: today + the kind's review_days",
            "duplicates": (
                "an exact copy of a record you can read or of your own pending proposal is refused with "
                "its id, and so is one that differs only in look-alike characters (Cyrillic 'а' for Latin "
                f"'a'); text with similarity >= {settings.VETTED_NEAR_DUPLICATE} to one of those in the "
                "same space is answered with similar_exists unless you pass confirm_duplicate=true or "
                "revise that record; anything you cannot see is the reviewer's to compare"
            ),
            "resubmission": (
                "content of yours a reviewer rejected, sent again unchanged, is not stored: the answer is "
                "already_rejected with that proposal and the reviewer's note. Change it to address the note, "
                "or pass resubmit=true with resubmit_reason saying what changed"
            ),
            "rate_limit": write_limiter.describe(),
            "disputes": (
                f"at most {dispute_cap} open (pending) disputes at a time; you have {open_disputes}. Past "
                "that, dispute is refused until a reviewer decides some"
                if dispute_cap
                else "no cap"
            ),
        },
        "limits": {
            "proposals_per_minute": write_limiter.limit,
            "reads_per_minute": read_limiter.limit,
            "open_disputes": dispute_cap,
            "open_disputes_yours": open_disputes,
            "mcp_sessions": settings.VETTED_MCP_SESSIONS_PER_AGENT,
            "mcp_sessions_opened_per_minute": initialize_limiter.limit,
            "note": (
                "Per agent; 0 means no limit. Reads are search, read, list, describe, quality_check and "
                f"proposal_status ({read_limiter.describe()}). Past a per-minute limit a call is refused with "
                "retry_after (REST 429 with Retry-After, MCP '[rate_limited] ... retry in N s'). Opening more "
                "MCP sessions than mcp_sessions closes your oldest one."
            ),
        },
        "save": (
            "Durable facts, decisions, preferences and procedures that will still be true next month and that "
            "another tool or session would need. Do not save secrets, credentials, guesses, transient task "
            "state, or anything already returned by search (revise it instead)."
        ),
    }
