"""What an agent may propose: new records, revisions, retirements, disputes,
and taking back its own pending proposal. The near-duplicate check happens
here; every write is an action call."""

from __future__ import annotations

from django.conf import settings

from retrieval.similar import similar_pending, similar_records
from reviews import actions, confusables
from reviews import validation as v
from reviews.checksum import content_checksum
from reviews.errors import AlreadyRejected, NotFound, ValidationFailed
from reviews.formats import iso
from reviews.models import Agent, Proposal, Record

from .grant import own_proposals
from .inputs import clean_proposal_id, clean_record_id, raise_errors
from .limits import write_limiter
from .shapes import proposal_shape


def _pending_answer(proposal: Proposal, message: str) -> dict:
    return {
        "status": "pending",
        "proposal": proposal_shape(proposal),
        "proposal_id": proposal.public_id,
        "message": message,
    }


def propose_context(
    agent: Agent,
    *,
    title=None,
    body=None,
    kind=None,
    space=None,
    tags=None,
    reason=None,
    review_by=None,
    revises=None,
    confirm_duplicate=False,
    resubmit=False,
    resubmit_reason=None,
) -> dict:
    """A create proposal, or a revise proposal when ``revises`` names a record.

    Content this agent already had rejected is not stored: the answer is
    ``already_rejected`` with that proposal and the reviewer's note, unless
    ``resubmit`` is true with a ``resubmit_reason`` (reviews.actions, _resubmission).

    Exact duplicates are refused by the action (DuplicateContent with the
    existing id). Near duplicates in the same space are not stored: the answer
    is ``similar_exists`` with their ids, unless ``confirm_duplicate`` is true.
    Either way only what the agent may be told about counts: records it can
    read and its own pending proposals. Anything else is stored like any
    proposal and the reviewer sees the cluster; the answer is the same as if
    it did not exist.
    """
    write_limiter.hit(agent)
    if not isinstance(confirm_duplicate, bool):
        raise ValidationFailed({"confirm_duplicate": f"got {confirm_duplicate!r}; true or false"})
    resubmission = _resubmission_args(resubmit, resubmit_reason)
    try:
        return _propose(
            agent, title, body, kind, space, tags, reason, review_by, revises, confirm_duplicate, resubmission
        )
    except AlreadyRejected as exc:
        return _rejected_answer(exc)


def _resubmission_args(resubmit, resubmit_reason) -> dict:
    if not isinstance(resubmit, bool):
        raise ValidationFailed({"resubmit": f"got {resubmit!r:.40}; true or false"})
    if resubmit_reason is not None and not isinstance(resubmit_reason, str):
        raise ValidationFailed({"resubmit_reason": f"got {resubmit_reason!r:.40}; a text saying what changed"})
    if resubmit_reason and not resubmit:
        raise ValidationFailed({"resubmit_reason": "only with resubmit=true"})
    return {"resubmit": resubmit, "resubmit_reason": resubmit_reason or ""}


def _rejected_answer(exc: AlreadyRejected) -> dict:
    earlier = exc.earlier
    return {
        "status": "already_rejected",
        "proposal_id": earlier.public_id,
        "proposal": proposal_shape(earlier),
        "decided_at": iso(earlier.decided_at),
        "decision_note": earlier.decision_note,
        "message": exc.message,
    }


def _propose(agent, title, body, kind, space, tags, reason, review_by, revises, confirm_duplicate, resubmission):
    if revises not in (None, ""):
        return _propose_revision(
            agent,
            clean_record_id(revises, "revises"),
            title=title,
            body=body,
            kind=kind,
            space=space,
            tags=tags,
            reason=reason,
            review_by=review_by,
            confirm_duplicate=confirm_duplicate,
            resubmission=resubmission,
        )
    fields = {"title": title, "body": body, "kind": kind, "space": space, "tags": tags, "review_by": review_by}
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
    # Checked even when other fields are wrong, so one answer names every problem;
    # an unknown space reads like one not granted, naming only the agent's.
    if space not in (None, "") and str(space).strip().lower() not in agent.spaces:
        errors["space"] = v.unknown_space_message(space, agent.spaces)
    raise_errors(errors)
    if not confirm_duplicate:
        answer = _near_duplicates(content, agent, exclude=())
        if answer:
            return answer
    proposal = actions.propose_create(agent=agent, reason=reason, **resubmission, **fields)
    return _pending_answer(
        proposal,
        "Stored as a pending proposal. A reviewer will accept, revise or reject it; "
        f"call proposal_status with {proposal.public_id} to learn the decision.",
    )


def _propose_revision(
    agent: Agent, target_id: str, *, confirm_duplicate: bool, reason, resubmission: dict, **given
) -> dict:
    changes = {name: value for name, value in given.items() if value is not None}
    target = Record.objects.filter(public_id=target_id).first()
    if target is not None and target.space in agent.spaces and not confirm_duplicate:
        # A revision is naturally close to what it revises (and its chain);
        # only *other* current records count as near duplicates.
        chain = {target.public_id}
        if target.supersedes is not None:
            chain.add(target.supersedes.public_id)
        # From the approved text, as the action does: text changed outside
        # Vetted plays no part in what the agent is told (no copy: the action refuses).
        base = target.approved_version() or target.checksummed_content()
        content = {
            "title": changes.get("title", base["title"]),
            "body": changes.get("body", base["body"]),
            "space": base["space"],
            "tags": changes.get("tags", base["tags"]),
        }
        try:
            content["tags"] = v.clean_tags(content["tags"])
            content["title"], content["body"] = v.clean_title(content["title"]), v.clean_body(content["body"])
        except ValidationFailed:
            pass  # the action reports every problem, by field
        else:
            answer = _near_duplicates(content, agent, exclude=chain)
            if answer:
                return answer
    proposal = actions.propose_revision(target_id, agent=agent, reason=reason, **resubmission, **changes)
    return _pending_answer(
        proposal,
        f"Stored as a pending revision of {target_id}. If accepted, a new record "
        f"supersedes {target_id}; call proposal_status with {proposal.public_id} to learn the decision.",
    )


def _near_duplicates(content: dict, agent: Agent, *, exclude) -> dict | None:
    """similar_exists when records the agent can read, or its own pending
    proposals, in the same space say nearly the same (exact copies are the
    action's to refuse). Other agents' proposals are never named, nor
    counted: their text is nobody's to learn before review."""
    threshold = settings.VETTED_NEAR_DUPLICATE
    if threshold >= 1.0:
        return None
    exact = (
        content_checksum(
            kind=content.get("kind", ""),
            space=content["space"],
            title=content["title"],
            body=content["body"],
            tags=content["tags"],
        )
        if "kind" in content
        else None
    )
    # Look-alike copies (same skeleton) are the action's to refuse, like exact ones.
    looks_same = (
        confusables.content_key(
            kind=content["kind"],
            space=content["space"],
            title=content["title"],
            body=content["body"],
            tags=content["tags"],
        )
        if "kind" in content
        else None
    )
    hits = similar_records(
        content["title"],
        content["body"],
        tags=content["tags"],
        spaces=[content["space"]],
        threshold=threshold,
        exclude_ids=exclude,
    )
    hits = [h for h in hits if h.record.approved_checksum != exact and h.record.skeleton_checksum != looks_same]
    waiting = similar_pending(
        content["title"],
        content["body"],
        tags=content["tags"],
        space=content["space"],
        threshold=threshold,
        exclude_checksum=exact,
        agent=agent,
    )
    waiting = [w for w in waiting if w.proposal.skeleton_checksum != looks_same]
    if not hits and not waiting:
        return None
    ids = ", ".join([h.record.public_id for h in hits] + [w.proposal.public_id for w in waiting])
    where = " and ".join(
        part
        for part in (
            f"{len(hits)} current record(s)" if hits else "",
            f"{len(waiting)} of your proposal(s) already waiting for review" if waiting else "",
        )
        if part
    )
    return {
        "status": "similar_exists",
        "similar": [h.as_dict() for h in hits] + [w.as_dict() for w in waiting],
        "threshold": threshold,
        "message": (
            f"Not stored: {where} in space {content['space']!r} say nearly the same ({ids}). Read them "
            "first. If a record is outdated or incomplete, propose a revision of it (revises=<id>); if a "
            "pending proposal covers it, wait for the reviewer (proposal_status); if yours is genuinely "
            "different, call again with confirm_duplicate=true."
        ),
    }


def propose_retirement(agent: Agent, record_id, reason) -> dict:
    write_limiter.hit(agent)
    target_id = clean_record_id(record_id)
    proposal = actions.propose_retirement(target_id, agent=agent, reason=reason)
    return _pending_answer(
        proposal,
        f"Stored as a pending retirement of {target_id}; the record stays in search until a reviewer accepts it.",
    )


def dispute(agent: Agent, record_id, reason) -> dict:
    write_limiter.hit(agent)
    target_id = clean_record_id(record_id)
    proposal = actions.dispute_record(target_id, agent=agent, reason=reason)
    return _pending_answer(
        proposal,
        f"{target_id} is now disputed and withheld from search until "
        "a reviewer clears the dispute, retires it, or corrects it.",
    )


def withdraw_proposal(agent: Agent, proposal_id, note=None) -> dict:
    """Take back one of the agent's own pending proposals (a withdrawn
    dispute no longer withholds its record, unless another is pending).

    Another agent's proposal gives the same 404 as an unknown id, as in
    proposal_status: an agent cannot learn which proposal ids exist."""
    write_limiter.hit(agent)
    public_id = clean_proposal_id(proposal_id)
    if not own_proposals(agent).filter(public_id=public_id).exists():
        raise NotFound(f"No proposal of yours with id {public_id!r}.")
    if note is not None and not isinstance(note, str):
        raise ValidationFailed({"note": f"got {note!r:.40}; a short text, or leave it out"})
    proposal = actions.withdraw_proposal(public_id, agent=agent, note=note or "")
    return {
        "status": "withdrawn",
        "proposal_id": proposal.public_id,
        "proposal": proposal_shape(proposal),
        "message": f"{proposal.public_id} is withdrawn: it leaves the reviewer's inbox and cannot be reopened; "
        "propose again if you change your mind.",
    }
