"""Writing a checked ``vetted-export`` document into the database, rows as
they are. Only reviews.actions.import_snapshot calls this (inside its
transaction)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model

from reviews import confusables
from reviews.checksum import approved_copy
from reviews.models import Agent, AuditEvent, Proposal, Record

from .format import (
    AGENT_FIELDS,
    AGENT_TIMES,
    AUDIT_FIELDS,
    PROPOSAL_DATES,
    PROPOSAL_FIELDS,
    PROPOSAL_TIMES,
    RECORD_DATES,
    RECORD_FIELDS_V1,
    RECORD_TIMES,
    SnapshotInvalid,
    parse_date,
    parse_dt,
)
from .spaces import grant_problems, member_names, write_spaces


def _look_alike_keys(row: dict[str, Any], *, title: bool = False) -> dict[str, Any]:
    """The derived look-alike keys (not exported: computed from the text; for
    a record, from its approved copy when one is kept, as new_record does)."""
    keys = {
        "skeleton_checksum": confusables.content_key(
            kind=row["kind"], space=row["space"], title=row["title"], body=row["body"], tags=row["tags"]
        )
    }
    if title:
        keys["title_skeleton"] = confusables.title_key(row["title"])
    return keys


def write_snapshot(
    data: dict[str, Any], *, importer: Any, progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Insert everything in ``data`` (validated) in the current transaction,
    merging into the spaces and agents that exist (``importer``: the person
    importing, who must own a space to add members to it). Returns facts for
    the summary. Only reviews.actions.import_snapshot calls this."""
    User = get_user_model()
    usernames = {row["approved_by"] for row in data["records"]}
    usernames |= {row["decided_by"] for row in data["proposals"] if row["decided_by"]}
    usernames |= {row["owner"] for row in data["agents"] if row.get("owner")}
    usernames |= member_names(data)
    user_pk, created_users = {}, []
    for name in sorted(usernames):
        user = User.objects.filter(username=name).first()
        if user is None:
            user = User(username=name, is_active=False)
            user.set_unusable_password()
            user.save()
            created_users.append(name)
        user_pk[name] = user.pk

    # Before the records that live in them; raises on a conflict with a space here.
    spaces_created, members_added = write_spaces(data, user_pk, importer)
    agent_pk, mapped_agents, created_agents, tokenless = {}, [], [], []
    grants: dict[Agent, list[str]] = {}
    grant_refusals: list[str] = []
    for row in data["agents"]:
        existing = Agent.objects.filter(public_id=row["public_id"]).first()
        same_name = Agent.objects.filter(name=row["name"]).first()
        if existing is not None and existing.name != row["name"]:
            raise SnapshotInvalid(
                [
                    (
                        f"agent {row['public_id']!r}: this instance already has that id for agent "
                        f"{existing.name!r}, not {row['name']!r}"
                    )
                ]
            )
        target = existing or same_name
        if target is not None:
            agent_pk[row["public_id"]] = target.pk
            mapped_agents.append(row["name"])
            missing, problems = grant_problems(target, row)
            grant_refusals += problems
            if missing:
                grants[target] = missing
            continue
        if row["token_digest"] and Agent.objects.filter(token_digest=row["token_digest"]).exists():
            raise SnapshotInvalid([f"agent {row['name']!r}: its token digest is already used by an agent here"])
        fields = {name: row[name] for name in AGENT_FIELDS}
        fields["owner_id"] = user_pk[row["owner"]] if row.get("owner") else None
        for name in AGENT_TIMES:
            fields[name] = parse_dt(fields[name])
        agent = Agent.objects.create(**fields)
        agent_pk[row["public_id"]] = agent.pk
        created_agents.append(row["name"])
        if not row["token_digest"] and row["is_active"] and row["name"] != "import":
            tokenless.append(row["name"])

    if grant_refusals:
        raise SnapshotInvalid(grant_refusals)
    grants_added = []
    for target, missing in grants.items():
        Agent.objects.filter(pk=target.pk).update(spaces=sorted({*target.spaces, *missing}))
        grants_added += [{"agent": target.name, "space": slug} for slug in missing]

    record_pk = {}
    for row in data["records"]:
        fields = {
            name: row[name]
            for name in RECORD_FIELDS_V1
            if name not in ("approved_by", "supersedes", "superseded_by", "proposed_by")
        }
        fields["approved_content"] = (
            row["approved_content"] if data["version"] >= 2 else approved_copy(row, row["approved_checksum"])
        )
        for name in RECORD_DATES:
            fields[name] = parse_date(fields[name])
        for name in RECORD_TIMES:
            fields[name] = parse_dt(fields[name])
        record = Record.objects.create(
            **fields,
            **_look_alike_keys(fields["approved_content"] or row, title=True),
            approved_by_id=user_pk[row["approved_by"]],
            proposed_by_id=agent_pk[row["proposed_by"]] if row["proposed_by"] else None,
        )
        record_pk[row["public_id"]] = record.pk
        if progress:
            progress(1)
    for row in data["records"]:
        # Links once every row exists; updated_at again, because auto_now
        # overwrote it on insert (QuerySet.update leaves auto_now alone).
        Record.objects.filter(pk=record_pk[row["public_id"]]).update(
            supersedes_id=record_pk.get(row["supersedes"]),
            superseded_by_id=record_pk.get(row["superseded_by"]),
            updated_at=parse_dt(row["updated_at"]),
        )

    for row in data["proposals"]:
        fields = {
            name: row[name]
            for name in PROPOSAL_FIELDS
            if name not in ("target", "result_record", "agent", "decided_by")
        }
        for name in PROPOSAL_DATES:
            fields[name] = parse_date(fields[name])
        for name in PROPOSAL_TIMES:
            fields[name] = parse_dt(fields[name])
        proposal = Proposal.objects.create(
            **fields,
            **(_look_alike_keys(row) if row["content_checksum"] else {}),
            target_id=record_pk.get(row["target"]),
            result_record_id=record_pk.get(row["result_record"]),
            agent_id=agent_pk[row["agent"]] if row["agent"] else None,
            decided_by_id=user_pk[row["decided_by"]] if row["decided_by"] else None,
        )
        Proposal.objects.filter(pk=proposal.pk).update(updated_at=fields["updated_at"])
        if progress:
            progress(1)

    # The write log verbatim, original ids included. Events already here (the
    # new instance's own account and agents) may hold some of those ids: then
    # every imported id is shifted by one constant, recorded in the import's
    # own event, so order and gaps survive.
    original = [row["id"] for row in data["audit"]]
    offset = 0
    if original:
        existing_ids = set(
            AuditEvent.objects.filter(id__gte=min(original), id__lte=max(original)).values_list("id", flat=True)
        )
        if existing_ids & set(original):
            last = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
            offset = last - min(original) + 1
    batch = []
    for row in data["audit"]:
        fields = {name: row[name] for name in AUDIT_FIELDS}
        fields["id"] = row["id"] + offset
        fields["at"] = parse_dt(row["at"])
        batch.append(AuditEvent(**fields))
        if len(batch) >= 500:
            AuditEvent.objects.bulk_create(batch)
            batch = []
        if progress:
            progress(1)
    if batch:
        AuditEvent.objects.bulk_create(batch)

    edited = [
        row["public_id"]
        for row in data["records"]
        if Record(
            kind=row["kind"], space=row["space"], title=row["title"], body=row["body"], tags=row["tags"]
        ).current_checksum()
        != row["approved_checksum"]
    ]
    return {
        "users_created_inactive": created_users,
        "spaces_created": spaces_created,
        "members_added": members_added,
        "grants_added": grants_added,
        "agents_created": created_agents,
        "agents_mapped": mapped_agents,
        "agents_without_token": tokenless,
        "audit_id_offset": offset,
        "edited_since_approval": edited,
    }
