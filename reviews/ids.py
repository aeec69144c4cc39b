"""The public id format, once: a prefix, an underscore, 12 lowercase hex digits.

Models mint ids with ``new_id``; validators, the API's parsers, the OpenAPI
schema and the portability formats check them with the patterns here.
"""

from __future__ import annotations

import re
import secrets

RECORD = "rec"
PROPOSAL = "prop"
AGENT = "agt"
# 12 hex chars = 48 random bits: short enough to read aloud, and a collision
# (caught by the unique index) is vanishingly rare.
HEX_DIGITS = 12
EXAMPLE_RECORD_ID = "rec_1a2b3c4d5e6f"

_BODY = f"[0-9a-f]{{{HEX_DIGITS}}}"


def pattern(prefix: str) -> str:
    """The anchored regular expression (a string) for ids with ``prefix``."""
    return rf"^{prefix}_{_BODY}$"


RECORD_ID_PATTERN = pattern(RECORD)
PROPOSAL_ID_PATTERN = pattern(PROPOSAL)
AGENT_ID_PATTERN = pattern(AGENT)
RECORD_ID_RE = re.compile(RECORD_ID_PATTERN)
PROPOSAL_ID_RE = re.compile(PROPOSAL_ID_PATTERN)
AGENT_ID_RE = re.compile(AGENT_ID_PATTERN)
# Any record or proposal id mentioned inside free text.
MENTION_RE = re.compile(rf"\b(?:{RECORD}|{PROPOSAL})_{_BODY}\b")


def describe(prefix: str) -> str:
    """How an id looks, for error messages: 'rec_ followed by 12 hex digits'."""
    return f"{prefix}_ followed by {HEX_DIGITS} hex digits"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(HEX_DIGITS // 2)}"
