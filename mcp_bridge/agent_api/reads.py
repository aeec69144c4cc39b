"""What an agent may read: search, read, list, its proposals' status, the quality report."""

from __future__ import annotations

from django.utils import timezone

from retrieval import search as search_engine
from retrieval.gate import read_record, withhold_reason
from reviews.errors import NotFound, ValidationFailed
from reviews.models import Agent, Proposal, Record

from .inputs import (
    _optional_kind,
    _optional_scope,
    _proposal_id,
    _raise,
    _reader,
    _record_id,
    _since,
    _space_or_scope,
    _tag_list,
)
from .limits import read_limiter
from .shapes import WITHHELD_EXPLAINED, proposal_shape, record_full, record_summary

LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 20


def search(agent: Agent, query, *, mode="hybrid", kind=None, space=None, scope=None, tags=None, limit=8) -> dict:
    """The gated search, limited to the agent's spaces (``space``: one of them; ``scope`` a deprecated alias)."""
    read_limiter.hit(agent)
    errors: dict[str, str] = {}
    kinds = _optional_kind(kind, errors)
    space, deprecated = _space_or_scope(space, scope)
    scopes = _optional_scope(agent, space, errors)
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
    if deprecated:
        data["deprecated"] = deprecated
    return data


def read(agent: Agent, record_id) -> dict:
    """One record through the gate: its text, or why it is withheld."""
    read_limiter.hit(agent)
    result = read_record(_record_id(record_id), _reader(agent))
    if result.record is not None:
        search_engine.access_counter.add([result.record.pk])
        return {"id": result.public_id, "deliverable": True, "record": record_full(result.record, agent.scopes)}
    assert result.withheld is not None  # read_record gives a record or a reason
    explanation = WITHHELD_EXPLAINED[result.withheld]
    data = {"id": result.public_id, "deliverable": False, "withheld": result.withheld}
    if result.successor is not None:
        data["current_version"] = result.successor.public_id
        explanation += f"; read {result.successor.public_id} instead"
    return {**data, "explanation": explanation}


def list_records(
    agent: Agent, *, kind=None, space=None, scope=None, tag=None, since=None, limit=LIST_LIMIT_DEFAULT
) -> dict:
    """Recently approved or verified records the agent can receive, newest first."""
    read_limiter.hit(agent)
    errors: dict[str, str] = {}
    kinds = _optional_kind(kind, errors)
    space, deprecated = _space_or_scope(space, scope)
    scopes = _optional_scope(agent, space, errors) or list(agent.scopes)
    tag_list = _tag_list(tag, errors, field="tag")
    after = _since(since, errors)
    number = search_engine._whole_number(limit) or 0
    if not 1 <= number <= LIST_LIMIT_MAX:
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
        batch = list(rows[offset : offset + page])
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
    answer: dict = {"records": found, "count": len(found), "limit": number}
    if deprecated:
        answer["deprecated"] = deprecated
    return answer


def proposal_status(agent: Agent, proposal_id) -> dict:
    """State and decision of one of the agent's own proposals."""
    read_limiter.hit(agent)
    public_id = _proposal_id(proposal_id)
    proposal = (
        Proposal.objects.select_related("target", "result_record").filter(public_id=public_id, agent=agent).first()
    )
    if proposal is None:  # other agents' proposals do not exist for this one
        raise NotFound(f"No proposal of yours with id {public_id!r}.")
    return proposal_shape(proposal)


def quality_check(agent: Agent, *, scope=None) -> dict:
    """The read-only quality report as this agent may see it: in its scopes
    (one of them if ``scope`` is given), findings about deliverable records
    and its own proposals, withheld records by id only (quality.run's agent
    view)."""
    read_limiter.hit(agent)
    from retrieval import quality  # loads numpy-heavy code only when asked

    errors: dict[str, str] = {}
    scopes = _optional_scope(agent, scope, errors) or list(agent.scopes)
    _raise(errors)
    report = quality.run(scopes, agent=agent)
    data = report.as_dict()
    data["note"] = (
        "These are flags for the reviewer, not decisions. If you have evidence about a flagged record, "
        "dispute it or propose a revision with that evidence."
    )
    return data
