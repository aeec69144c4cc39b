"""How an agent should use Vetted, in one place: the MCP server's
instructions, the ``vetted-instructions`` prompt, and the block
``manage.py connect`` prints for CLAUDE.md / AGENTS.md are this text.

Standard library only (nothing at all is imported): the stdio bridge can
read it without Django, like common/defaults.py.
"""

PROMPT_NAME = "vetted-instructions"

GUIDANCE = """\
## Shared memory (Vetted)
You have a shared, human-reviewed memory through the `vetted` MCP server.
- At the start of a session call `describe` once: it lists the kinds, spaces and tags in use and the write rules.
- Before answering from memory, or before proposing anything, call `search` (and `read` for a whole record).
  Only what a person approved is returned; trust it over your own recollection, and say when you used it.
- When you learn something durable that another session or tool would need (a decision, a fact about a
  system, a user preference, a procedure), call `propose_context` with a reason. It waits for the user's review.
  To correct a record, propose a revision (`revises`); if a record is wrong, `dispute` it with the evidence;
  if it no longer holds, `propose_retirement`.
- Do not save secrets, credentials, personal data of others, guesses, or transient task state.
- Use `proposal_status` to learn what the reviewer decided; never re-propose a rejected item unchanged.
  If a pending proposal of yours turns out wrong, `withdraw_proposal` it."""

PROMPT_DESCRIPTION = (
    "How to use this memory (when to search, propose, dispute or retire; what never to store): "
    "the text `manage.py connect` prints for CLAUDE.md / AGENTS.md."
)
