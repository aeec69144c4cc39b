"""Proposals a person makes by editing a file Vetted wrote (a managed block
in an instruction file, a vault note): authored by that person
(``user:NAME``, no agent), decided like any other proposal. A person may
propose only in spaces they may read; editing a file never decides anything."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction

from .. import validation as v
from ..checksum import checksum_of
from ..errors import DuplicateContent, InvalidTransition, NotFound, ValidationFailed
from ..models import Proposal, ProposalAction, ProposalState, Record
from ..space_access import readable_spaces
from ._common import (
    apply_changes,
    audit,
    check_not_duplicate,
    locked_record,
    require_live,
)
from ._notify import tell_proposal
from .content import approved_base, skeleton_of


def _person(user: object) -> User:
    if not isinstance(user, get_user_model()) or not user.is_active:
        raise InvalidTransition("Only an active account can propose from an edited file.")
    return user


def _readable_target(user: User, target: Record | str) -> Record:
    record = locked_record(target)
    approved = record.approved_text() if record.edited_since_approval else None
    spaces = {record.space, approved["space"]} if approved else {record.space}
    if not spaces <= set(readable_spaces(user)):
        raise NotFound(f"No record with id {record.public_id!r}.")
    return record


def _store(
    action: str,
    *,
    user: User,
    reason: str,
    source_tool: str,
    target: Record | None,
    content: dict[str, Any] | None = None,
    checks: tuple[str, str] | None = None,
) -> Proposal:
    fields = dict(content or {})
    checksum, skeleton = checks or ("", "")
    proposal = Proposal.objects.create(
        action=action,
        target=target,
        agent=None,
        proposed_by_user=user.get_username(),
        reason=reason,
        source_tool=v.clean_short("source_tool", source_tool, v.SOURCE_TOOL_MAX),
        content_checksum=checksum,
        skeleton_checksum=skeleton,
        **fields,
    )
    audit(
        "proposal.created",
        actor=user,
        subject=proposal,
        record=target,
        proposal=proposal,
        before=target.approved_checksum if target else "",
        after=checksum,
        snippet=proposal.title or (target.title if target else ""),
        extra={"action": action, "edited_file": True, **({"space": fields["space"]} if "space" in fields else {})},
    )
    tell_proposal(proposal)
    return proposal


def propose_file_revision(
    target: Record | str, *, user: object, reason: str, source_tool: str = "file", **changes: Any
) -> Proposal:
    """``user`` edited the text of ``target`` in a file Vetted wrote: a revise proposal from them."""
    with transaction.atomic():
        person = _person(user)
        record = _readable_target(person, target)
        require_live(record, "revise")
        base = approved_base(record, "revise")
        content, _changed = apply_changes(base, changes, lock_space=base["space"])
        checksum = checksum_of(content)
        if checksum == record.approved_checksum:
            raise ValidationFailed({"body": f"the edit is identical to {record.public_id}"})
        skeleton = skeleton_of(content)
        check_not_duplicate(checksum, skeleton=skeleton, ignore_record=record)
        return _store(
            ProposalAction.REVISE,
            user=person,
            reason=v.clean_reason(reason),
            source_tool=source_tool,
            target=record,
            content=content,
            checks=(checksum, skeleton),
        )


def propose_file_create(*, user: object, reason: str, source_tool: str = "file", **fields: Any) -> Proposal:
    """``user`` wrote new text into a file Vetted watches: a create proposal from them, in a space they read."""
    with transaction.atomic():
        person = _person(user)
        content = v.clean_content(fields)
        if content["space"] not in readable_spaces(person):
            raise ValidationFailed({"space": f"{person.get_username()} may not propose into {content['space']!r}"})
        checksum, skeleton = checksum_of(content), skeleton_of(content)
        check_not_duplicate(checksum, skeleton=skeleton)
        return _store(
            ProposalAction.CREATE,
            user=person,
            reason=v.clean_reason(reason),
            source_tool=source_tool,
            target=None,
            content=content,
            checks=(checksum, skeleton),
        )


def propose_file_retirement(target: Record | str, *, user: object, reason: str, source_tool: str = "file") -> Proposal:
    """``user`` deleted the file (or block section) of ``target``: a retirement proposal from them."""
    with transaction.atomic():
        person = _person(user)
        record = _readable_target(person, target)
        require_live(record, "retire")
        pending = Proposal.objects.filter(
            target=record,
            action=ProposalAction.RETIRE,
            state=ProposalState.PENDING,
            agent=None,
            proposed_by_user=person.get_username(),
        ).first()
        if pending:
            raise DuplicateContent(
                f"A retirement of {record.public_id} is already waiting for review: {pending.public_id}.",
                existing_id=pending.public_id,
            )
        return _store(
            ProposalAction.RETIRE, user=person, reason=v.clean_reason(reason), source_tool=source_tool, target=record
        )
