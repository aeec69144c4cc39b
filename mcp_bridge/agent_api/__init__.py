"""What an agent may do, once: the operations behind both the MCP tools and
the REST API. Each function takes the authenticated ``Agent`` (from its
token, never from a field the agent fills in) and plain arguments, and
returns a JSON-ready dict; bad input raises a ``reviews.errors.VettedError``
whose message says what was wrong and what is allowed.

Reads go through the retrieval gate; writes call ``reviews.actions`` (the
only place state changes) and nothing here approves, edits, retires,
verifies or deletes anything. Records in spaces the agent may not read do
not exist for it: they are not returned, counted or named.

Modules: ``inputs`` (parsing what the agent sends), ``shapes`` (what it
receives), ``describe``, ``reads``, ``proposals`` (writes) and ``limits``
(the per-agent rate limits), ``grant`` (the spaces the credential in use may
see: the one source every read, write and notice asks), ``resources`` (MCP resources and what a
subscriber may hear). Everything public is re-exported here.
"""

from .describe import describe
from .grant import Credential, agent_for, credential_holds, own_proposals, spaces
from .limits import SlidingWindowLimiter, initialize_limiter, read_limiter, write_limiter
from .proposals import dispute, propose_context, propose_retirement, withdraw_proposal
from .reads import (
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    list_records,
    proposal_status,
    quality_check,
    query_cost,
    query_problem,
    read,
    search,
)
from .resources import (
    PROPOSAL_URI,
    RECORD_URI,
    change_notice,
    changed_uris,
    list_resources,
    newest_change_ids,
    read_resource,
    seen_below,
)
from .shapes import EXCERPT_CHARS, WITHHELD_EXPLAINED, proposal_shape, record_full, record_summary

__all__ = [
    "Credential",
    "agent_for",
    "credential_holds",
    "own_proposals",
    "spaces",
    "EXCERPT_CHARS",
    "PROPOSAL_URI",
    "RECORD_URI",
    "change_notice",
    "changed_uris",
    "list_resources",
    "newest_change_ids",
    "seen_below",
    "read_resource",
    "LIST_LIMIT_DEFAULT",
    "LIST_LIMIT_MAX",
    "SlidingWindowLimiter",
    "WITHHELD_EXPLAINED",
    "describe",
    "dispute",
    "initialize_limiter",
    "list_records",
    "proposal_shape",
    "proposal_status",
    "propose_context",
    "propose_retirement",
    "quality_check",
    "query_cost",
    "query_problem",
    "read",
    "read_limiter",
    "record_full",
    "record_summary",
    "search",
    "withdraw_proposal",
    "write_limiter",
]
