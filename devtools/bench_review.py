"""What `manage.py bench_review` seeds and how its reviewer decides.

The seed is a realistic mix from three agents: creates (some near duplicates
of an approved record, some contradicting one in a number), revisions of long
Markdown bodies, retirements and disputes. The reviewer works through the
inbox at phone size; each kind of card has a plan (`PLANS`): which steps it
takes, by tap or by key. A step is data (a selector, a key, text to type), so
a new control (Undo's `u` and `#undo-toast`, the compact view, the dispute
buttons `data-decision="keep|correct|retire"`) is a new entry here, not new code.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from django.test import override_settings

from devtools.synthetic import make_record
from reviews import actions
from reviews.models import Proposal, ProposalState

FIELDS = ("kind", "space", "title", "body", "tags")
# Out of each ten proposals: 0, 2 plain creates; 1 a near duplicate; 3 a
# contradiction; 4-6 revisions; 7 a retirement; 8, 9 disputes. In this order,
# so that even a short run (the smoke test's 6) has every kind.
MIX = (0, 8, 4, 7, 1, 3, 5, 2, 6, 9)
# Every share-9 dispute comes from one agent: a burst (ten in a hundred, within
# the seed's seconds), which puts the burst warnings above the inbox.
BURST_SHARE = 9

LONG_MARKDOWN = """## How it works

{body}

### Steps

1. Check the **dashboard** for the {n} service.
2. Run `make deploy SERVICE={n}` from a clean checkout.
3. Watch the error rate for ten minutes; roll back with `make rollback` if it rises.

```
kubectl --namespace=prod-{n} rollout status deployment/api-{n} --timeout=600s
```

| setting | value |
|---|---|
| replicas | {replicas} |
| memory | {memory} GB |

> Ask the owner before changing the limits.
"""


@dataclass(frozen=True)
class Step:
    """One thing the reviewer does: tap (click) a selector inside the card,
    press a key, or type text into the focused field (typing is not counted
    as taps or keys: its length depends on the note)."""

    tap: str = ""
    key: str = ""
    type: str = ""
    # A selector inside the card to wait for before the next step; "&" stands
    # for the card itself ("&.current .actions": the opened card, once htmx
    # has settled it and keys.js made it current again).
    wait: str = ""
    # Wait until htmx has processed the card's controls (a key pressed in the
    # few milliseconds before would follow the plain link instead).
    settle: bool = False


# Plans by name; the seed marks each proposal with the plan its card gets.
# The words are reviews/vocabulary.py's: a dispute or a retirement is
# decided by what happens to the record, and no single key or tap retires.
PLANS: dict[str, list[Step]] = {
    "accept by tap": [Step(tap="form[action$='/accept'] button")],
    "accept by keys": [Step(key="a")],
    "reject with a note by keys": [
        Step(key="r", wait="input[name=note]"),
        Step(type="Already covered by an approved record"),
        Step(key="Enter"),
    ],
    "reject with a note by tap": [
        Step(tap="details.reject summary", wait="input[name=note]"),
        Step(tap="input[name=note]"),
        Step(type="Contradicts the approved record"),
        Step(tap="details.reject button[type=submit]"),
    ],
    "correct a dispute by keys": [
        # Once htmx has settled the form (keys.js made it current): a tap
        # before that could meet a page that keys.js then scrolls to the form.
        Step(key="e", wait="&.current textarea[name=body]"),
        Step(tap="textarea[name=body]"),
        Step(key="Control+End"),
        Step(type=" Corrected by the reviewer."),
        Step(key="Control+Enter"),
    ],
    "retire a record by tap": [
        Step(tap="details.retire summary", wait="details.retire button[type=submit]"),
        Step(tap="details.retire button[type=submit]"),
    ],
}

# In the compact list a create or revise line carries Accept and Reject (no
# note); anything else first opens the line into its full card: by key (o)
# for a keyboard plan, by a tap on the line for a tap plan.
ONE_TAP_ON_A_LINE = {"accept by tap", "accept by keys"}
OPEN_BY_KEY = Step(key="o", wait="&.current .actions", settle=True)
OPEN_BY_TAP = Step(tap=".line-main", wait="&.current .actions", settle=True)
# The reviewer undoes one decision (by key, u: the toast's Undo) and decides it again.
UNDO_AFTER = 3


def plan_steps(how: str, view: str) -> list[Step]:
    """The steps of plan ``how`` in the inbox ``view`` (cards or compact)."""
    if view != "compact" or how in ONE_TAP_ON_A_LINE:
        return PLANS[how]
    return [OPEN_BY_KEY if "keys" in how else OPEN_BY_TAP, *PLANS[how]]


def _agents(reviewer) -> list:
    return [
        actions.create_agent(name, spaces=["personal", "team"], actor=reviewer)[0]
        for name in ("claude-code", "cursor", "team-bot")
    ]


def seed(rng: random.Random, total: int, reviewer) -> dict[str, str]:
    """Seed ``total`` pending proposals; return public id -> plan name."""
    agents = _agents(reviewer)
    plan: dict[str, str] = {}
    # Approved records the revisions, retirements, disputes and look-alikes act on.
    approved = []
    with override_settings(VETTED_OPEN_DISPUTES_PER_AGENT=0, VETTED_PROPOSALS_PER_MINUTE=0):
        for n in range(total * 2 // 3 + 4):
            fields = {k: v for k, v in make_record(rng, n).items() if k in FIELDS}
            if n % 3 == 0:
                fields["body"] = LONG_MARKDOWN.format(
                    body=fields["body"], n=n, replicas=rng.randrange(2, 9), memory=rng.randrange(1, 64)
                )
            proposal = actions.propose_create(agent=agents[n % 3], reason="Bench seed", **fields)
            record = actions.accept_proposal(proposal, actor=reviewer).result_record
            assert record is not None  # an accepted create always produces one
            approved.append(record)
        targets = iter(approved)
        for n in range(total):
            share = MIX[n % len(MIX)]
            agent = agents[2] if share == BURST_SHARE else agents[n % 3]
            target = next(targets, None) if share >= 4 else None
            if target is None or share < 4:
                fields = {k: v for k, v in make_record(rng, 1000 + n).items() if k in FIELDS}
                like = approved[n % len(approved)]
                if share == 1:  # a near duplicate of an approved record
                    fields.update(title=like.title + " (copy)", body=like.body.replace(".", " .", 1))
                    how = "reject with a note by keys"
                elif share == 3:  # contradicts one in a number
                    fields.update(title=like.title, body=like.body.replace("Limits: ", "Limits: 1", 1))
                    how = "reject with a note by tap"
                else:
                    how = "accept by tap" if share == 0 else "accept by keys"
                p = actions.propose_create(agent=agent, reason="Seen in a design document", **fields)
            elif share < 7:
                body = target.body + f"\n\nUpdated: {rng.randrange(2, 900)} requests per second since the upgrade."
                p = actions.propose_revision(target, agent=agent, reason="The limits changed", body=body)
                how = "accept by keys" if share < 6 else "accept by tap"
            elif share < 8:
                p = actions.propose_retirement(target, agent=agent, reason="The service was shut down")
                how = "retire a record by tap"
            else:
                p = actions.dispute_record(target, agent=agent, reason="The owner changed last month")
                how = "correct a dispute by keys"
            plan[p.public_id] = how
    assert Proposal.objects.filter(state=ProposalState.PENDING).count() == total
    return plan
