"""Every state change in Vetted, one function each (``from reviews import actions``).

Contract shared by all actions:
- atomic: it either fully happens or changes nothing;
- it re-reads and locks the rows it changes inside its transaction (SQLite
  runs transactions as BEGIN IMMEDIATE, which takes the database write lock
  up front, so the re-read state cannot change before commit; on other
  databases ``select_for_update`` does the locking);
- it validates its inputs and raises a ``reviews.errors.VettedError``
  subclass for bad input or an invalid transition, writing nothing;
- it writes exactly one AuditEvent in the same transaction (an import writes
  one per row it creates).

Views, the REST API, MCP tools, the admin and management commands call these
and never change models themselves.

Actors: a ``User`` (a reviewer), an ``Agent``, or a ``SystemActor``. Only
active staff users may decide anything; agents may only propose, dispute and
withdraw their own proposals.

The package holds one module per family: ``proposals`` (agents propose),
``decisions`` (a reviewer decides a proposal), ``merges`` (a create merged into a
revision, or rejected as a duplicate), ``records`` (a reviewer acts
on a record), ``agents`` (agents and tokens), ``accounts`` (reviewer
accounts: first run, staff status, active or not), ``imports`` (files and
snapshots), ``undo`` (a reviewer takes back a decision), ``spaces`` (spaces, members,
agents' grants) and ``approvals`` (the two-person rule); ``_common`` holds
what they share. Everything public is re-exported here.
"""

from ..models import Agent
from ._common import Actor, SystemActor, require_reviewer
from ._notify import DISPUTE_BURST, DISPUTE_WINDOW_MINUTES
from .accounts import (
    activate_account,
    clear_login_lockout,
    create_first_reviewer,
    deactivate_account,
    inbox_view_of,
    is_loopback,
    set_account_staff,
    set_inbox_view,
)
from .agents import (
    IMPORT_AGENT_NAME,
    SEEN_EVERY_SECONDS,
    TOKEN_PREFIX,
    agent_for_credential,
    agent_for_token,
    create_agent,
    credential_of,
    effective_spaces,
    import_agent,
    note_agent_seen,
    revoke_agent,
    rotate_agent_token,
)
from .decisions import accept_proposal, accept_proposal_with_revision, reject_proposal
from .imports import ImportFailed, ImportResult, ImportSummary, import_records, import_snapshot
from .invitations import accept_invitation, create_invitation, open_invitation, open_invitations, revoke_invitation
from .merges import UNNAMED_DUPLICATE, merge_into_revision, reject_as_duplicate
from .notices import ScanResult, feed_key_of, note_changed_outside, rotate_feed_key, scan_for_notices
from .person_edits import propose_file_create, propose_file_retirement, propose_file_revision
from .proposals import dispute_record, propose_create, propose_retirement, propose_revision, withdraw_proposal
from .records import (
    approve_current_text,
    clear_dispute,
    move_record,
    restore_approved_text,
    retire_record,
    revise_record,
    verify_record,
)
from .spaces import (
    add_member,
    check_grants,
    claim_unowned_spaces,
    create_space,
    grant_space,
    remove_member,
    revoke_space,
    set_required_approvals,
)
from .undo import DECISION_EVENTS, UNDONE_EVENT, decision_event, undo_decision, undo_refusal, undone_events

__all__ = [
    "DECISION_EVENTS",
    "UNDONE_EVENT",
    "DISPUTE_BURST",
    "DISPUTE_WINDOW_MINUTES",
    "IMPORT_AGENT_NAME",
    "SEEN_EVERY_SECONDS",
    "TOKEN_PREFIX",
    "UNNAMED_DUPLICATE",
    "Actor",
    "Agent",
    "ImportFailed",
    "ImportResult",
    "ImportSummary",
    "ScanResult",
    "SystemActor",
    "require_reviewer",
    "accept_proposal",
    "accept_proposal_with_revision",
    "activate_account",
    "accept_invitation",
    "add_member",
    "create_invitation",
    "open_invitation",
    "open_invitations",
    "check_grants",
    "claim_unowned_spaces",
    "create_space",
    "grant_space",
    "remove_member",
    "revoke_invitation",
    "revoke_space",
    "set_required_approvals",
    "agent_for_credential",
    "agent_for_token",
    "credential_of",
    "effective_spaces",
    "approve_current_text",
    "clear_dispute",
    "clear_login_lockout",
    "create_agent",
    "create_first_reviewer",
    "deactivate_account",
    "decision_event",
    "dispute_record",
    "feed_key_of",
    "import_agent",
    "import_records",
    "import_snapshot",
    "inbox_view_of",
    "is_loopback",
    "merge_into_revision",
    "move_record",
    "note_changed_outside",
    "note_agent_seen",
    "propose_create",
    "propose_file_create",
    "propose_file_retirement",
    "propose_file_revision",
    "propose_retirement",
    "propose_revision",
    "reject_as_duplicate",
    "reject_proposal",
    "restore_approved_text",
    "retire_record",
    "revise_record",
    "revoke_agent",
    "rotate_feed_key",
    "rotate_agent_token",
    "scan_for_notices",
    "set_account_staff",
    "set_inbox_view",
    "undo_decision",
    "undo_refusal",
    "undone_events",
    "verify_record",
    "withdraw_proposal",
]

# OAuth 2.1 grants for remote agents (used by mcp_bridge/oauth and the consent page).
from . import oauth as oauth  # noqa: E402
