"""Imports: rows from a file as proposals (optionally accepted), and a whole
``vetted-export`` snapshot into an empty instance."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from .. import snapshot
from ..errors import DuplicateContent, InvalidTransition, ValidationFailed, VettedError
from ..models import Agent, Proposal, Record, SubjectType
from ._common import Actor, audit, require_reviewer
from .agents import import_agent
from .decisions import accept_proposal
from .proposals import propose_create


@dataclass
class ImportResult:
    created: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"created": len(self.created), "errors": self.errors, "ids": self.created}


class ImportFailed(VettedError):
    code = "import_failed"

    def __init__(self, result: ImportResult):
        super().__init__(f"{len(result.errors)} line(s) invalid; nothing was imported.", errors=result.errors)
        self.result = result


def import_records(
    rows: Iterable[tuple[int, dict[str, Any]]],
    *,
    agent: Agent | None = None,
    reviewer: Actor | None = None,
    partial: bool = False,
    reason: str = "Imported from a file",
    prior_errors: Iterable[dict[str, Any]] = (),
    on_row: Callable[[], None] | None = None,
) -> ImportResult:
    """Import ``(line_number, fields)`` rows as create proposals (from ``agent``,
    default the tokenless ``import`` agent). With ``reviewer``, each proposal is
    accepted by that person at once. All or nothing unless ``partial``: then
    valid rows are kept and invalid ones reported. Each row goes through
    propose_create (and accept_proposal), so the same write rules and
    duplicate checks apply, including duplicates between rows of the file.
    ``prior_errors`` are problems the caller found before (e.g. unparsable
    lines); they count like row errors and are reported with them, by line.
    """
    allowed = {
        "title",
        "body",
        "kind",
        "space",
        "tags",
        "review_by",
        "metadata",
        "valid_from",
        "valid_until",
        "confidence",
        "reason",
        "session",
    }
    result = ImportResult(errors=list(prior_errors))
    line_of: dict[str, int] = {}  # id created by this import -> its line
    with transaction.atomic():
        if reviewer is not None:
            require_reviewer(reviewer)
        source = agent or import_agent()
        for line, fields in rows:
            try:
                if not isinstance(fields, dict):
                    raise ValidationFailed({"line": "must be a JSON object"})
                unknown = sorted(set(fields) - allowed)
                if unknown:
                    raise ValidationFailed(
                        {name: f"unknown field; allowed: {', '.join(sorted(allowed))}" for name in unknown}
                    )
                data = dict(fields)
                row_reason = data.pop("reason", None) or reason
                session = data.pop("session", "")
                with transaction.atomic():  # a savepoint: a bad row leaves no trace
                    proposal = propose_create(
                        agent=source,
                        reason=row_reason,
                        source_tool="import",
                        session=session,
                        full_duplicate_check=True,
                        **data,
                    )
                    if reviewer is not None:
                        proposal = accept_proposal(proposal, actor=reviewer, note="Approved at import")
                made = proposal.result_record
                created_id = made.public_id if made is not None else proposal.public_id
                line_of[created_id] = line
                result.created.append(created_id)
            except DuplicateContent as exc:
                if exc.existing_id in line_of:
                    # Without --partial that id is rolled back; name the line instead.
                    earlier = line_of[exc.existing_id]
                    kept = f" ({exc.existing_id})" if partial else ""
                    result.errors.append({"line": line, "error": f"identical to line {earlier}{kept}"})
                else:
                    result.errors.append({"line": line, "error": exc.message})
            except VettedError as exc:
                result.errors.append({"line": line, "error": exc.message})
            if on_row:
                on_row()
        result.errors.sort(key=lambda e: e["line"])
        if result.errors and not partial:
            raise ImportFailed(result)
    return result


# ----------------------------------------------------------- snapshot import (export_json / import_json)


@dataclass
class ImportSummary:
    counts: dict[str, Any]
    details: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {**self.counts, **self.details}


def import_snapshot(
    data: dict[str, Any], *, actor: Actor, progress: Callable[[int], None] | None = None
) -> ImportSummary:
    """Load a ``vetted-export`` document (see reviews/snapshot/) into an
    instance that has no records and no proposals yet, all or nothing.

    Records, proposals, agents and the write log are copied as they are
    (public ids, statuses, checksums, timestamps, supersession chains, audit
    rows with their ids); users named in the file map onto existing accounts
    or are created inactive without a password. The copied audit rows are
    history, not new changes; this import itself writes one more event,
    ``snapshot.imported``. Raises snapshot.SnapshotInvalid for a bad file
    and InvalidTransition for an instance that already holds memory.

    Spaces and agents that exist here are merged into, never changed: a space
    gains the file's members it lacks (``actor`` must own it), an agent of the
    same person the file's grants it lacks, each written as its own
    ``space.member_added`` / ``agent.granted`` event (``import: true``); a
    different kind, approval rule, role or agent person refuses the import."""
    data = snapshot.upgrade(data)  # a file of an earlier version, with today's names
    counts = snapshot.validate_snapshot(data)
    with transaction.atomic():
        reviewer = require_reviewer(actor)
        if Record.objects.exists() or Proposal.objects.exists():
            raise InvalidTransition(
                f"This instance already holds {Record.objects.count()} record(s) and {Proposal.objects.count()} "
                "proposal(s); import_json only loads into an empty instance (a fresh VETTED_HOME, or restore a "
                "backup instead)."
            )
        details = snapshot.write_snapshot(data, importer=reviewer, progress=progress)
        _advance_id_sequences()
        # After the copied write log (whose ids may shift), as new changes.
        for m in details["members_added"]:
            audit(
                "space.member_added",
                actor=reviewer,
                subject=(SubjectType.SPACE, m["space"]),
                snippet=m["user"],
                extra={"member": m["user"], "role": m["role"], "import": True},
            )
        for g in details["grants_added"]:
            agent = Agent.objects.get(name=g["agent"])
            audit(
                "agent.granted",
                actor=reviewer,
                subject=agent,
                snippet=agent.name,
                extra={"space": g["space"], "grants": list(agent.spaces), "import": True},
            )
        audit(
            "snapshot.imported",
            actor=reviewer,
            subject=reviewer,
            snippet=f"vetted-export v{data['version']}",
            extra={
                **counts,
                "spaces": data["space_slugs"],
                "exported_at": data["exported_at"],
                "audit_id_offset": details["audit_id_offset"],
                "users_created_inactive": details["users_created_inactive"],
                "spaces_created": details["spaces_created"],
                "members_added": details["members_added"],
                "grants_added": details["grants_added"],
                "agents_created": details["agents_created"],
                "agents_mapped": details["agents_mapped"],
            },
        )
        return ImportSummary(counts=counts, details=details)


def _advance_id_sequences() -> None:
    """Rows were written with the ids of the file: move PostgreSQL's id
    sequences past them, or the next insert would reuse an id (SQLite takes
    max(id) + 1 by itself, and Django's sequence_reset_sql is empty there)."""
    from django.apps import apps
    from django.contrib.auth import get_user_model
    from django.core.management.color import no_style
    from django.db import connection

    models = [*apps.get_app_config("reviews").get_models(), get_user_model()]
    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(sql)
