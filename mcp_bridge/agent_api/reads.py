"""What an agent may read: search, read, list, its proposals' status, the quality report."""

from __future__ import annotations

from django.utils import timezone

from retrieval import asof, stages
from retrieval import search as search_engine
from retrieval.gate import read_record, withhold_reason
from reviews import history
from reviews.errors import NotFound, ValidationFailed
from reviews.models import Agent, Record

from .grant import own_proposals
from .inputs import (
    checked_tags,
    clean_proposal_id,
    clean_record_id,
    clean_since,
    optional_kind,
    optional_space,
    raise_errors,
    reader_for,
)
from .limits import read_limiter
from .shapes import WITHHELD_EXPLAINED, proposal_shape, record_full, record_summary

LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 20


def _moment(as_of, valid_at, errors: dict):
    """as_of / valid_at (reviews.history says what each means), or None for now."""
    try:
        return history.clean_moment(as_of, valid_at)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    return None


# An agent's query: its length is what embedding it and ranking by it cost
# (a 2,000-character query cost about five ordinary ones), so it is bounded,
# and weighed in the read limit at one read per QUERY_CHARS_PER_READ.
QUERY_CHARS_MAX = 1000
QUERY_WORDS_MAX = 64
QUERY_CHARS_PER_READ = 250


def query_problem(query) -> str | None:
    """Why an agent's query does too much work, naming the limits; None if it does not."""
    if not isinstance(query, str):
        return None
    words = len(query.split())
    if len(query) > QUERY_CHARS_MAX or words > QUERY_WORDS_MAX:
        return (
            f"got {len(query):,} characters and {words:,} words; a query may have at most "
            f"{QUERY_CHARS_MAX:,} characters and {QUERY_WORDS_MAX} words: ask for what you want to know "
            "in a sentence, or search for each part on its own"
        )
    return None


def query_cost(query) -> int:
    """How many reads a search weighs: one, and one more per QUERY_CHARS_PER_READ characters."""
    length = min(len(query), QUERY_CHARS_MAX) if isinstance(query, str) else 0
    return 1 + length // QUERY_CHARS_PER_READ


def search(
    agent: Agent,
    query,
    *,
    mode="hybrid",
    kind=None,
    space=None,
    tags=None,
    limit=8,
    as_of=None,
    valid_at=None,
) -> dict:
    """The gated search, limited to the agent's spaces (``space``: one of them);
    with ``as_of`` what it would have received
    at that moment, with ``valid_at`` the records whose validity window holds
    that day. A query's work is bounded (``query_problem``), and a long one
    weighs more in the read limit (``query_cost``)."""
    read_limiter.hit(agent, cost=query_cost(query))
    errors: dict[str, str] = {}
    moment = _moment(as_of, valid_at, errors)
    kinds = optional_kind(kind, errors)
    spaces = optional_space(agent, space, errors)
    tag_list = checked_tags(tags, errors)
    try:
        search_engine.validate(query, mode, limit)
    except ValidationFailed as exc:
        errors.update(exc.fields)
    problem = query_problem(query)
    if problem and "query" not in errors:
        errors["query"] = problem
    raise_errors(errors)
    filters = search_engine.Filters(kinds=kinds, spaces=spaces, tags_all=tag_list)
    clock = stages.clock()  # None unless a benchmark is timing the stages
    if clock is not None:
        clock.lap("agent API: limiter, inputs")
    response = search_engine.search(
        query, mode=mode, filters=filters, limit=int(limit), reader=reader_for(agent), moment=moment
    )
    data = response.as_dict()
    data["took_ms"] = round(response.took_ms, 1)
    if data["withheld_total"]:
        data["withheld_explained"] = {reason: WITHHELD_EXPLAINED[reason] for reason in data["withheld"]}
    if clock is not None:
        clock.lap("serialisation (shapes)")
    return data


def read(agent: Agent, record_id, *, as_of=None, valid_at=None) -> dict:
    """One record through the gate: its text, or why it is withheld (at
    ``as_of`` / on ``valid_at`` when given: the approved text as it stood then)."""
    read_limiter.hit(agent)
    errors: dict[str, str] = {}
    moment = _moment(as_of, valid_at, errors)
    raise_errors(errors)
    public_id = clean_record_id(record_id)
    result = asof.read_at(public_id, reader_for(agent), moment) if moment else read_record(public_id, reader_for(agent))
    when = moment.as_dict() if moment else {}
    if result.record is not None:
        if moment is None or moment.at is None:
            search_engine.access_counter.add([result.record.pk])
        record = record_full(result.record, agent.spaces)
        return {"id": result.public_id, "deliverable": True, **when, "record": record}
    assert result.withheld is not None  # read_record gives a record or a reason
    explanation = WITHHELD_EXPLAINED[result.withheld]
    data = {"id": result.public_id, "deliverable": False, **when, "withheld": result.withheld}
    if result.successor is not None:
        data["current_version"] = result.successor.public_id
        explanation += f"; read {result.successor.public_id} instead"
    return {**data, "explanation": explanation}


def list_records(
    agent: Agent,
    *,
    kind=None,
    space=None,
    tag=None,
    since=None,
    limit=LIST_LIMIT_DEFAULT,
    as_of=None,
    valid_at=None,
) -> dict:
    """Recently approved or verified records the agent can receive, newest
    first (at ``as_of`` / on ``valid_at`` when given: as they stood then)."""
    read_limiter.hit(agent)
    errors: dict[str, str] = {}
    moment = _moment(as_of, valid_at, errors)
    kinds = optional_kind(kind, errors)
    spaces = optional_space(agent, space, errors) or list(agent.spaces)
    tag_list = checked_tags(tag, errors, field="tag")
    after = clean_since(since, errors)
    number = search_engine._whole_number(limit) or 0
    if not 1 <= number <= LIST_LIMIT_MAX:
        errors["limit"] = f"got {limit!r}; a whole number from 1 to {LIST_LIMIT_MAX}"
    raise_errors(errors)
    if moment is not None:
        then = asof.list_at(
            reader_for(agent), moment, spaces=spaces, kinds=kinds, tags_all=tag_list, since=after, limit=number
        )
        found_then = [record_summary(record) for record in then]
        answer_then: dict = {"records": found_then, "count": len(found_then), "limit": number, **moment.as_dict()}
        return answer_then
    today = timezone.localdate()
    rows = Record.objects.deliverable(spaces, today)
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
    return answer


def proposal_status(agent: Agent, proposal_id) -> dict:
    """State and decision of one of the agent's own proposals."""
    read_limiter.hit(agent)
    public_id = clean_proposal_id(proposal_id)
    proposal = own_proposals(agent).select_related("target", "result_record").filter(public_id=public_id).first()
    if proposal is None:  # other agents' proposals, and its own outside this credential's spaces, do not exist
        raise NotFound(f"No proposal of yours with id {public_id!r}.")
    return proposal_shape(proposal)


def quality_check(agent: Agent, *, space=None) -> dict:
    """The read-only quality report as this agent may see it: in its spaces
    (one of them if ``space`` is given), findings about deliverable records
    and its own proposals, withheld records by id only (quality.run's agent
    view)."""
    read_limiter.hit(agent)
    from retrieval import quality  # loads numpy-heavy code only when asked

    errors: dict[str, str] = {}
    spaces = optional_space(agent, space, errors) or list(agent.spaces)
    raise_errors(errors)
    report = quality.run(spaces, agent=agent)
    data = report.as_dict()
    data["note"] = (
        "These are flags for the reviewer, not decisions. If you have evidence about a flagged record, "
        "dispute it or propose a revision with that evidence."
    )
    return data
