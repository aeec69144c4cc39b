"""What an agent may do, once: the operations behind both the MCP tools and
the REST API. Each function takes the authenticated ``Agent`` (from its
token, never from a field the agent fills in) and plain arguments, and
returns a JSON-ready dict; bad input raises a ``reviews.errors.VettedError``
whose message says what was wrong and what is allowed.

Reads go through the retrieval gate; writes call ``reviews.actions`` (the
only place state changes) and nothing here approves, edits, retires,
verifies or deletes anything. Records in scopes the agent may not read do
not exist for it: they are not returned, counted or named.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from retrieval import search as search_engine
from retrieval.gate import REASONS, Reader, read_record, withhold_reason
from retrieval.similar import similar_pending, similar_records
from reviews import actions
from reviews import validation as v
from reviews.checksum import content_checksum
from reviews.errors import NotFound, RateLimited, ValidationFailed
from reviews.models import SCOPES, Agent, Proposal, ProposalState, Record

LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 20
EXCERPT_CHARS = 280
_RECORD_ID_RE = re.compile(r"^rec_[0-9a-f]{12}$")
_PROPOSAL_ID_RE = re.compile(r"^prop_[0-9a-f]{12}$")

WITHHELD_EXPLAINED = {
    "retired": "a reviewer retired it: it no longer holds",
    "superseded": "a newer version replaced it",
    "disputed": "an agent disputed it and a reviewer has not decided yet",
    "edited": "its text changed after approval (checksum mismatch) and it needs review again",
    "expired": "its validity window has ended",
    "not_yet_valid": "its validity window has not started",
    "overdue": "it is past its review date and waits for a reviewer to verify it",
}
assert set(WITHHELD_EXPLAINED) == set(REASONS)


# --------------------------------------------------------------------------- rate limit


class ProposalRateLimiter:
    """Sliding one-minute window of write calls per agent, in this process.

    Vetted runs as one daemon process (REST and MCP share it, and the stdio
    bridge proxies to it), so an in-memory window sees every write. Every
    write call counts, refused ones included: an agent stuck in a loop of
    invalid proposals is slowed down as much as one flooding the inbox.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._calls: dict[str, deque[float]] = {}

    def hit(self, agent: Agent, *, now: float | None = None) -> None:
        limit = settings.VETTED_PROPOSALS_PER_MINUTE
        if not limit:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            calls = self._calls.setdefault(agent.public_id, deque())
            while calls and calls[0] <= now - 60:
                calls.popleft()
            if len(calls) >= limit:
                retry_after = max(1, int(calls[0] + 60 - now + 0.999))
                raise RateLimited(
                    f"Rate limit: agent {agent.name!r} may send {limit} proposals per minute; "
                    f"retry in {retry_after} s.",
                    retry_after=retry_after,
                )
            calls.append(now)

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()


rate_limiter = ProposalRateLimiter()


# --------------------------------------------------------------------------- input helpers


def _reader(agent: Agent) -> Reader:
    return Reader.for_agent(agent)


def _record_id(value, field: str = "id") -> str:
    text = str(value or "").strip() if isinstance(value, str) else ""
    if not _RECORD_ID_RE.match(text):
        shown = repr(value)[:60] if value not in (None, "") else "nothing"
        raise ValidationFailed({field: f"got {shown}; a record id looks like rec_ followed by 12 hex digits (rec_1a2b3c4d5e6f)"})
    return text


def _proposal_id(value) -> str:
    text = str(value or "").strip() if isinstance(value, str) else ""
    if not _PROPOSAL_ID_RE.match(text):
        shown = repr(value)[:60] if value not in (None, "") else "nothing"
        raise ValidationFailed({"id": f"got {shown}; a proposal id looks like prop_ followed by 12 hex digits"})
    return text


def _optional_kind(value, errors: dict) -> list[str]:
    if value in (None, ""):
        return []
    try:
        return [v.clean_kind(value)]
    except ValidationFailed as exc:
        errors.update(exc.fields)
        return []


def _optional_scope(agent: Agent, value, errors: dict) -> list[str]:
    if value in (None, ""):
        return []
    scope = str(value).strip().lower()
    if scope not in agent.scopes:
        errors["scope"] = f"got {str(value)[:40]!r}; your scopes: {', '.join(agent.scopes)}"
        return []
    return [scope]


def _tag_list(value, errors: dict, field: str = "tags") -> list[str]:
    if value in (None, "", []):
        return []
    try:
        return v.clean_tags(value)
    except ValidationFailed as exc:
        errors[field] = exc.fields.get("tags", exc.message)
        return []


def _since(value, errors: dict) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, str):
        text = value.strip()
        parsed = None
        try:
            parsed = parse_datetime(text)
            if parsed is None:
                day = parse_date(text)
                parsed = datetime(day.year, day.month, day.day) if day else None
        except ValueError:
            parsed = None
        if parsed is not None:
            if timezone.is_naive(parsed):
                parsed = timezone.make_aware(parsed)
            return parsed
    errors["since"] = f"got {str(value)[:40]!r}; a date (2026-11-30) or an ISO date-time (2026-11-30T09:00:00Z)"
    return None


def _raise(errors: dict) -> None:
    if errors:
        raise ValidationFailed(errors)


# --------------------------------------------------------------------------- shapes


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def record_summary(record: Record) -> dict:
    body = record.body
    excerpt = body if len(body) <= EXCERPT_CHARS else body[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
    return {
        "id": record.public_id,
        "title": record.title,
        "kind": record.kind,
        "scope": record.scope,
        "tags": record.tags,
        "excerpt": excerpt,
        "approved_at": _iso(record.approved_at),
        "verified_at": _iso(record.verified_at),
        "review_by": _iso(record.review_by),
    }


def record_full(record: Record, scopes=SCOPES) -> dict:
    """Every field an agent may see. Links to versions in scopes the reader
    cannot read (a record moved from personal to team) are left out."""
    supersedes = record.supersedes if record.supersedes_id else None
    return {
        "id": record.public_id,
        "title": record.title,
        "kind": record.kind,
        "scope": record.scope,
        "tags": record.tags,
        "body": record.body,
        "status": record.status,
        "approved_at": _iso(record.approved_at),
        "approved_by": record.approved_by.get_username() if record.approved_by_id else None,
        "verified_at": _iso(record.verified_at),
        "review_by": _iso(record.review_by),
        "valid_from": _iso(record.valid_from),
        "valid_until": _iso(record.valid_until),
        "supersedes": supersedes.public_id if supersedes is not None and supersedes.scope in scopes else None,
        "checksum": record.approved_checksum,
        "confidence": record.confidence,
        "source_tool": record.source_tool,
    }


def proposal_shape(proposal: Proposal) -> dict:
    data = {
        "id": proposal.public_id,
        "action": proposal.action,
        "state": proposal.state,
        "target": proposal.target.public_id if proposal.target_id else None,
        "title": proposal.title or (proposal.target.title if proposal.target_id else ""),
        "scope": proposal.scope or (proposal.target.scope if proposal.target_id else ""),
        "reason": proposal.reason,
        "created_at": _iso(proposal.created_at),
        "decided_at": _iso(proposal.decided_at),
        "decision_note": proposal.decision_note,
        "result_record": proposal.result_record.public_id if proposal.result_record_id else None,
        "reviewer_changed": sorted(proposal.reviewer_changes) if proposal.reviewer_changes else [],
    }
    data["next"] = {
        ProposalState.PENDING: "Waiting for a reviewer; check again later.",
        ProposalState.ACCEPTED: ("Accepted" + (f"; the record is {data['result_record']}" if data["result_record"] else "")
                                 + (" (the reviewer edited it before accepting)" if data["reviewer_changed"] else "") + "."),
        ProposalState.REJECTED: "Rejected; read decision_note for why, and do not propose the same thing again unchanged.",
        ProposalState.WITHDRAWN: "Withdrawn by the agent.",
    }.get(proposal.state, "")
    return data


# --------------------------------------------------------------------------- reads


def describe(agent: Agent) -> dict:
    """The live vocabulary an agent writes with, the write rules, and what it may see.

    Counts are of exactly what search can deliver to this agent (the
    domain's deliverable rule plus the checksum), and of its own pending
    proposals: nothing it may not see is counted."""
    today = timezone.localdate()
    scopes = [s for s in SCOPES if s in agent.scopes]
    by_scope: dict[str, int] = {s: 0 for s in scopes}
    by_kind: dict[str, int] = {k: 0 for k in v.kinds()}
    tag_counts: dict[str, int] = {}
    rows = Record.objects.deliverable(scopes, today).values_list("scope", "kind", "title", "body", "tags",
                                                                 "approved_checksum")
    for scope, kind, title, body, record_tags, approved in rows.iterator(chunk_size=1000):
        if content_checksum(kind=kind, scope=scope, title=title, body=body, tags=record_tags) != approved:
            continue  # edited out of band: search withholds it
        by_scope[scope] = by_scope.get(scope, 0) + 1
        by_kind[kind] = by_kind.get(kind, 0) + 1
        for tag in record_tags:
            tag_counts[tag] = tag_counts.get(tag, 0) + 1
    tags = [{"name": name, "records": count}
            for name, count in sorted(tag_counts.items(), key=lambda item: (-item[1], item[0]))[:200]]
    pending = Proposal.objects.filter(state=ProposalState.PENDING, agent=agent)
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
        "pending_proposals": {"yours": pending.count()},
        "write_rules": {
            "title": f"{v.TITLE_MIN}-{v.TITLE_MAX} characters, one line",
            "body": f"{v.BODY_MIN}-{v.BODY_MAX} characters of Markdown; real text, no keyboard mashing",
            "kind": f"one of: {', '.join(v.kinds())}",
            "scope": f"one of your scopes: {', '.join(scopes)}",
            "tags": (f"at most {v.TAGS_MAX}, lowercase, each up to {v.TAG_MAX_LEN} characters of a-z 0-9 . _ / : + -; "
                     "reuse the tags listed above where they fit"),
            "reason": f"required, at least {v.REASON_MIN} characters: why this is worth keeping (the reviewer reads it)",
            "review_by": "optional future date (YYYY-MM-DD); default: today + the kind's review_days",
            "duplicates": ("an exact copy of a record you can read or of your own pending proposal is refused with "
                           f"its id; text with similarity >= {settings.VETTED_NEAR_DUPLICATE} to one of those in the "
                           "same scope is answered with similar_exists unless you pass confirm_duplicate=true or "
                           "revise that record; anything you cannot see is the reviewer's to compare"),
            "rate_limit": (f"{settings.VETTED_PROPOSALS_PER_MINUTE} proposals per minute"
                           if settings.VETTED_PROPOSALS_PER_MINUTE else "none"),
        },
        "save": ("Durable facts, decisions, preferences and procedures that will still be true next month and that "
                 "another tool or session would need. Do not save secrets, credentials, guesses, transient task "
                 "state, or anything already returned by search (revise it instead)."),
    }


def search(agent: Agent, query, *, mode="hybrid", kind=None, scope=None, tags=None, limit=8) -> dict:
    """The gated search, limited to the agent's scopes."""
    errors: dict[str, str] = {}
    kinds = _optional_kind(kind, errors)
    scopes = _optional_scope(agent, scope, errors)
    tag_list = _tag_list(tags, errors)
    try:
        search_engine.validate(query, mode, limit)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    _raise(errors)
    filters = search_engine.Filters(kinds=kinds, scopes=scopes, tags_all=tag_list)
    response = search_engine.search(query, mode=mode, filters=filters, limit=int(limit), reader=_reader(agent))
    data = response.as_dict()
    data["took_ms"] = round(response.took_ms, 1)
    if data["withheld_total"]:
        data["withheld_explained"] = {reason: WITHHELD_EXPLAINED[reason] for reason in data["withheld"]}
    return data


def read(agent: Agent, record_id) -> dict:
    """One record through the gate: its text, or why it is withheld."""
    result = read_record(_record_id(record_id), _reader(agent))
    if result.record is not None:
        search_engine.access_counter.add([result.record.pk])
        return {"id": result.public_id, "deliverable": True, "record": record_full(result.record, agent.scopes)}
    data = {"id": result.public_id, "deliverable": False, "withheld": result.withheld,
            "explanation": WITHHELD_EXPLAINED[result.withheld]}
    if result.successor is not None:
        data["current_version"] = result.successor.public_id
        data["explanation"] += f"; read {result.successor.public_id} instead"
    return data


def list_records(agent: Agent, *, kind=None, scope=None, tag=None, since=None, limit=LIST_LIMIT_DEFAULT) -> dict:
    """Recently approved or verified records the agent can receive, newest first."""
    errors: dict[str, str] = {}
    kinds = _optional_kind(kind, errors)
    scopes = _optional_scope(agent, scope, errors) or list(agent.scopes)
    tag_list = _tag_list(tag, errors, field="tag")
    after = _since(since, errors)
    number = search_engine._whole_number(limit)
    if number is None or not 1 <= number <= LIST_LIMIT_MAX:
        errors["limit"] = f"got {limit!r}; a whole number from 1 to {LIST_LIMIT_MAX}"
    _raise(errors)
    today = timezone.localdate()
    rows = Record.objects.deliverable(scopes, today)
    if kinds:
        rows = rows.filter(kind__in=kinds)
    if after is not None:
        rows = rows.filter(approved_at__gte=after)
    rows = rows.order_by("-approved_at", "-pk")
    found: list[dict] = []
    # Walk in pages: the rest of the gate (the checksum) is applied in Python
    # and a tag filter on a JSON list is cheapest here too.
    offset, page = 0, max(number * 2, 50)
    while len(found) < number:
        batch = list(rows[offset:offset + page])
        if not batch:
            break
        offset += page
        for record in batch:
            if tag_list and not set(tag_list) <= set(record.tags or []):
                continue
            if withhold_reason(record, today) is None:
                found.append(record_summary(record))
                if len(found) >= number:
                    break
    return {"records": found, "count": len(found), "limit": number}


def proposal_status(agent: Agent, proposal_id) -> dict:
    """State and decision of one of the agent's own proposals."""
    public_id = _proposal_id(proposal_id)
    proposal = (Proposal.objects.select_related("target", "result_record")
                .filter(public_id=public_id, agent=agent).first())
    if proposal is None:  # other agents' proposals do not exist for this one
        raise NotFound(f"No proposal of yours with id {public_id!r}.")
    return proposal_shape(proposal)


def quality_check(agent: Agent, *, scope=None) -> dict:
    """The read-only quality report as this agent may see it: in its scopes
    (one of them if ``scope`` is given), findings about deliverable records
    and its own proposals, withheld records by id only (quality.run's agent
    view)."""
    from retrieval import quality  # loads numpy-heavy code only when asked

    errors: dict[str, str] = {}
    scopes = _optional_scope(agent, scope, errors) or list(agent.scopes)
    _raise(errors)
    report = quality.run(scopes, agent=agent)
    data = report.as_dict()
    data["note"] = ("These are flags for the reviewer, not decisions. If you have evidence about a flagged record, "
                    "dispute it or propose a revision with that evidence.")
    return data


# --------------------------------------------------------------------------- writes


def _pending_answer(proposal: Proposal, message: str) -> dict:
    return {"status": "pending", "proposal": proposal_shape(proposal), "proposal_id": proposal.public_id,
            "message": message}


def propose_context(agent: Agent, *, title=None, body=None, kind=None, scope=None, tags=None, reason=None,
                    review_by=None, revises=None, confirm_duplicate=False) -> dict:
    """A create proposal, or a revise proposal when ``revises`` names a record.

    Exact duplicates are refused by the action (DuplicateContent with the
    existing id). Near duplicates in the same scope are not stored: the answer
    is ``similar_exists`` with their ids, unless ``confirm_duplicate`` is true.
    Either way only what the agent may be told about counts: records it can
    read and its own pending proposals. Anything else is stored like any
    proposal and the reviewer sees the cluster; the answer is the same as if
    it did not exist.
    """
    rate_limiter.hit(agent)
    if not isinstance(confirm_duplicate, bool):
        raise ValidationFailed({"confirm_duplicate": f"got {confirm_duplicate!r}; true or false"})
    if revises not in (None, ""):
        return _propose_revision(agent, _record_id(revises, "revises"), title=title, body=body, kind=kind,
                                 scope=scope, tags=tags, reason=reason, review_by=review_by,
                                 confirm_duplicate=confirm_duplicate)
    fields = {"title": title, "body": body, "kind": kind, "scope": scope, "tags": tags, "review_by": review_by}
    # Validate everything first, so bad input gets the full list of problems
    # before any similarity is computed.
    errors: dict[str, str] = {}
    content: dict = {}
    try:
        content = v.clean_content(fields)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    try:
        v.clean_reason(reason)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    if "scope" not in errors and content and content["scope"] not in agent.scopes:
        errors["scope"] = f"got {content['scope']!r}; your scopes: {', '.join(agent.scopes)}"
    _raise(errors)
    if not confirm_duplicate:
        answer = _near_duplicates(content, agent, exclude=())
        if answer:
            return answer
    proposal = actions.propose_create(agent=agent, reason=reason, **fields)
    return _pending_answer(proposal, "Stored as a pending proposal. A reviewer will accept, revise or reject it; "
                                     f"call proposal_status with {proposal.public_id} to learn the decision.")


def _propose_revision(agent: Agent, target_id: str, *, confirm_duplicate: bool, reason, **given) -> dict:
    changes = {name: value for name, value in given.items() if value is not None}
    target = Record.objects.filter(public_id=target_id).first()
    if target is not None and target.scope in agent.scopes and not confirm_duplicate:
        # A revision is naturally close to what it revises (and its chain);
        # only *other* current records count as near duplicates.
        chain = {target.public_id}
        if target.supersedes_id:
            chain.add(target.supersedes.public_id)
        content = {"title": changes.get("title", target.title), "body": changes.get("body", target.body),
                   "scope": target.scope, "tags": changes.get("tags", target.tags)}
        try:
            content["tags"] = v.clean_tags(content["tags"])
            content["title"], content["body"] = v.clean_title(content["title"]), v.clean_body(content["body"])
        except ValidationFailed:
            pass  # the action reports every problem, by field
        else:
            answer = _near_duplicates(content, agent, exclude=chain)
            if answer:
                return answer
    proposal = actions.propose_revision(target_id, agent=agent, reason=reason, **changes)
    return _pending_answer(proposal, f"Stored as a pending revision of {target_id}. If accepted, a new record "
                                     f"supersedes {target_id}; call proposal_status with {proposal.public_id} to learn the decision.")


def _near_duplicates(content: dict, agent: Agent, *, exclude) -> dict | None:
    """similar_exists when records the agent can read, or its own pending
    proposals, in the same scope say nearly the same (exact copies are the
    action's to refuse). Other agents' proposals are never named, nor
    counted: their text is nobody's to learn before review."""
    threshold = settings.VETTED_NEAR_DUPLICATE
    if threshold >= 1.0:
        return None
    exact = content_checksum(kind=content.get("kind", ""), scope=content["scope"], title=content["title"],
                             body=content["body"], tags=content["tags"]) if "kind" in content else None
    hits = similar_records(content["title"], content["body"], tags=content["tags"], scopes=[content["scope"]],
                           threshold=threshold, exclude_ids=exclude)
    hits = [h for h in hits if h.record.approved_checksum != exact]
    waiting = similar_pending(content["title"], content["body"], tags=content["tags"], scope=content["scope"],
                              threshold=threshold, exclude_checksum=exact, agent=agent)
    if not hits and not waiting:
        return None
    ids = ", ".join([h.record.public_id for h in hits] + [w.proposal.public_id for w in waiting])
    where = " and ".join(part for part in (
        f"{len(hits)} current record(s)" if hits else "",
        f"{len(waiting)} of your proposal(s) already waiting for review" if waiting else "") if part)
    return {
        "status": "similar_exists",
        "similar": [h.as_dict() for h in hits] + [w.as_dict() for w in waiting],
        "threshold": threshold,
        "message": (f"Not stored: {where} in scope {content['scope']!r} say nearly the same ({ids}). Read them "
                    "first. If a record is outdated or incomplete, propose a revision of it (revises=<id>); if a "
                    "pending proposal covers it, wait for the reviewer (proposal_status); if yours is genuinely "
                    "different, call again with confirm_duplicate=true."),
    }


def propose_retirement(agent: Agent, record_id, reason) -> dict:
    rate_limiter.hit(agent)
    proposal = actions.propose_retirement(_record_id(record_id), agent=agent, reason=reason)
    return _pending_answer(proposal, f"Stored as a pending retirement of {proposal.target.public_id}; the record "
                                     "stays in search until a reviewer accepts it.")


def dispute(agent: Agent, record_id, reason) -> dict:
    rate_limiter.hit(agent)
    proposal = actions.dispute_record(_record_id(record_id), agent=agent, reason=reason)
    return _pending_answer(proposal, f"{proposal.target.public_id} is now disputed and withheld from search until "
                                     "a reviewer clears the dispute, retires it, or corrects it.")

