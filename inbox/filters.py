"""The inbox's filters, sort and cursor, read from query parameters once.

``?action=&agent=&kind=&space=&tag=&q=&file=&sort=&after=`` (``file``: the
instruction file an import took a proposal from, see portability/instructions): the listing, the
counts beside each filter value, "select all that match" and "Load more"
all go through ``parse`` and ``matching`` here, so they can never disagree
about which proposals a filter means. Retire and dispute proposals carry no
content of their own: their kind, space, tags and title are their target
record's. ``space`` keeps its name when spaces replace spaces.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, fields, replace
from urllib.parse import urlencode

from django.db.models import Case, CharField, Count, F, IntegerField, Q, QuerySet, TextField, Value, When
from django.db.models.functions import Cast

from reviews import validation
from reviews.errors import ValidationFailed
from reviews.models import Agent, Proposal, ProposalAction, ProposalState
from reviews.space_access import space_slugs

from . import viewer

SORTS = {"disputes": "disputes first, then oldest", "oldest": "oldest first", "newest": "newest first"}
DEFAULT_SORT = "disputes"
Q_MAX = 200
Q_WORDS_MAX = 8
FILE_MAX = 500
TARGETED = (ProposalAction.RETIRE, ProposalAction.DISPUTE)
FACETS = ("action", "agent", "kind", "space", "tag")
USER_PREFIX = "user:"  # proposals from an import or a reviewer: agent=user:NAME


@dataclass(frozen=True)
class InboxFilter:
    action: str = ""
    agent: str = ""
    kind: str = ""
    space: str = ""
    tag: str = ""
    q: str = ""
    file: str = ""  # the instruction file an import took the proposal from
    sort: str = DEFAULT_SORT

    @property
    def active(self) -> bool:
        return any(getattr(self, name) for name in (*FACETS, "q", "file"))

    def without(self, name: str) -> InboxFilter:
        return replace(self, **{name: "" if name != "sort" else DEFAULT_SORT})

    def params(self, **overrides: str) -> dict[str, str]:
        """The non-default parameters (for links and hidden fields), with ``overrides``."""
        values = {f.name: getattr(self, f.name) for f in fields(self)} | overrides
        return {k: v for k, v in values.items() if v and not (k == "sort" and v == DEFAULT_SORT)}

    def query(self, **overrides: str) -> str:
        return urlencode(self.params(**overrides))

    def described(self) -> str:
        """For a confirm and a message: ``action=create, agent=claude-code``."""
        shown = self.params()
        shown.pop("sort", None)
        return ", ".join(f"{k}={v}" for k, v in shown.items()) or "no filter"


def parse(params) -> tuple[InboxFilter, list[str]]:
    """The filter in ``params`` and a list of errors (each saying what is
    allowed). With errors the filter is not to be used: the caller shows them
    instead of a list that silently means something else."""
    raw = {name: (params.get(name) or "").strip() for name in (*FACETS, "q", "file", "sort")}
    errors = []
    if raw["action"] and raw["action"] not in ProposalAction.values:
        errors.append(f"action={raw['action']!r} is not one of: {', '.join(ProposalAction.values)}.")
    kinds = sorted(validation.kinds())
    if raw["kind"] and raw["kind"] not in kinds:
        errors.append(f"kind={raw['kind']!r} is not one of: {', '.join(kinds)}.")
    # The space filter: a slug of a space the viewer sees; another's is as unknown as a made-up one.
    shown_spaces = viewer.readable()
    spaces = space_slugs() if shown_spaces is None else shown_spaces
    if raw["space"] and raw["space"] not in spaces:
        errors.append(f"space={raw['space']!r} is not one of: {', '.join(spaces)}.")
    if raw["tag"]:
        try:
            cleaned = validation.clean_tags([raw["tag"]])
        except ValidationFailed as exc:
            errors.append(f"tag: {exc.fields.get('tags', 'not a tag')}.")
        else:
            raw["tag"] = cleaned[0] if cleaned else ""
    if raw["agent"] and not raw["agent"].startswith(USER_PREFIX) and not _named_to_viewer(raw["agent"]):
        errors.append(f"agent={raw['agent'][:64]!r}: no agent has that name (agents are listed on the Agents page).")
    if len(raw["q"]) > Q_MAX:
        errors.append(f"q is {len(raw['q'])} characters long; at most {Q_MAX} allowed.")
    if len(raw["file"]) > FILE_MAX:
        errors.append(f"file is {len(raw['file'])} characters long; at most {FILE_MAX} allowed.")
    if not raw["sort"]:
        raw["sort"] = DEFAULT_SORT
    elif raw["sort"] not in SORTS:
        errors.append(f"sort={raw['sort']!r} is not one of: {', '.join(SORTS)}.")
    return InboxFilter(**raw), errors


def _effective(queryset: QuerySet[Proposal]) -> QuerySet[Proposal]:
    """Each proposal's kind and space as the inbox shows them (a retire's or a dispute's are its target's)."""

    def of_target(name: str) -> Case:
        return Case(When(action__in=TARGETED, then=F(f"target__{name}")), default=F(name), output_field=CharField())

    return queryset.annotate(eff_kind=of_target("kind"), eff_space=of_target("space"))


def pending() -> QuerySet[Proposal]:
    """Pending proposals of the spaces the viewer decides in (inbox/viewer.py)."""
    return _effective(
        viewer.proposals(Proposal.objects.filter(state=ProposalState.PENDING).select_related("agent", "target"))
    )


def _tag_q(tag: str) -> Q:
    # Tags are a JSON list restricted to [a-z0-9._/:+-] (parse cleaned it),
    # so the quoted tag is an exact element match in the stored JSON text;
    # icontains escapes LIKE's % and _.
    quoted = f'"{tag}"'
    return Q(action__in=TARGETED, target__tags__icontains=quoted) | (
        ~Q(action__in=TARGETED) & Q(tags__icontains=quoted)
    )


def _agent_q(agent: str) -> Q:
    if agent.startswith(USER_PREFIX):
        return Q(agent__isnull=True, proposed_by_user=agent.removeprefix(USER_PREFIX))
    return Q(agent__name=agent)


def _text_q(text: str) -> Q:
    """Every word somewhere in the title, body, reason or the target's title.
    Django's icontains escapes % and _, so a word is matched literally."""
    match = Q()
    for word in text.split()[:Q_WORDS_MAX]:
        match &= (
            Q(title__icontains=word)
            | Q(body__icontains=word)
            | Q(reason__icontains=word)
            | Q(target__title__icontains=word)
        )
    return match


def _named_to_viewer(name: str) -> bool:
    """Whether the agent ``name`` is one the viewer may filter by: one they
    are shown (space_access.sees_agent) or one whose proposals they decide.
    Any other agent is as unknown as a made-up name, or the filter would tell
    that a name exists in a space the viewer has no part in."""
    agents = Agent.objects.filter(name=name)
    return (
        viewer.agents(agents).exists()
        or viewer.proposals(Proposal.objects.filter(agent__in=agents.values("pk"))).exists()
    )


def matching(f: InboxFilter, queryset: QuerySet[Proposal] | None = None) -> QuerySet[Proposal]:
    """Pending proposals matching ``f`` (unordered)."""
    queryset = pending() if queryset is None else queryset
    if f.action:
        queryset = queryset.filter(action=f.action)
    if f.agent:
        queryset = queryset.filter(_agent_q(f.agent))
    if f.kind:
        queryset = queryset.filter(Q(eff_kind=f.kind))  # annotated in _effective
    if f.space:
        queryset = queryset.filter(Q(eff_space=f.space))
    if f.tag:
        queryset = queryset.filter(_tag_q(f.tag))
    if f.q:
        queryset = queryset.filter(_text_q(f.q))
    if f.file:
        queryset = queryset.filter(metadata__import_file=f.file)
    return queryset


def ordered(f: InboxFilter, queryset: QuerySet[Proposal]) -> QuerySet[Proposal]:
    if f.sort == "newest":
        return queryset.order_by("-created_at", "-id")
    if f.sort == "oldest":
        return queryset.order_by("created_at", "id")
    urgent = Case(When(action=ProposalAction.DISPUTE, then=Value(0)), default=Value(1), output_field=IntegerField())
    return queryset.annotate(urgent=urgent).order_by("urgent", "created_at", "id")


def after(f: InboxFilter, queryset: QuerySet[Proposal], cursor: str) -> QuerySet[Proposal]:
    """Rows after the cursor (a proposal's pk) in ``f``'s order. The anchor is
    looked up in any state, so deciding it (or cards before it) does not
    shift the next page."""
    if not cursor.isdigit():
        return queryset
    anchor = Proposal.objects.filter(pk=int(cursor)).values("created_at", "action").first()
    if anchor is None:
        return queryset
    at, pk = anchor["created_at"], int(cursor)
    if f.sort == "newest":
        return queryset.filter(Q(created_at__lt=at) | Q(created_at=at, pk__lt=pk))
    later = Q(created_at__gt=at) | Q(created_at=at, pk__gt=pk)
    if f.sort == "oldest":
        return queryset.filter(later)
    if anchor["action"] == ProposalAction.DISPUTE:
        return queryset.filter((Q(action=ProposalAction.DISPUTE) & later) | ~Q(action=ProposalAction.DISPUTE))
    return queryset.filter(~Q(action=ProposalAction.DISPUTE) & later)


# The columns of the facets other than tags; one grouped query counts them all.
_COLUMNS = ("action", "agent__name", "proposed_by_user", "eff_kind", "eff_space")


def _tally_columns(rows: QuerySet[Proposal], facets: list[str], tallies: dict[str, Counter[str]]) -> None:
    for row in rows.values(*_COLUMNS).annotate(n=Count("pk")):
        for facet in facets:
            if facet == "action":
                tallies[facet][row["action"]] += row["n"]
            elif facet == "agent":
                tallies[facet][row["agent__name"] or f"{USER_PREFIX}{row['proposed_by_user'] or 'unknown'}"] += row["n"]
            elif row[f"eff_{facet}"]:
                tallies[facet][row[f"eff_{facet}"]] += row["n"]


def _tally_tags(rows: QuerySet[Proposal], tally: Counter[str]) -> None:
    """Tags are a JSON list per proposal (a retire's or dispute's are its
    target's). Counting list elements in SQL needs an engine's own JSON
    functions, so the distinct lists come as JSON text (Cast: no per-row
    decoding by the field) and are decoded here in one json.loads."""
    own = Cast("tags", TextField())
    theirs = Cast("target__tags", TextField())
    text = Case(When(action__in=TARGETED, then=theirs), default=own, output_field=TextField())
    grouped = list(rows.annotate(tag_text=text).values_list("tag_text").annotate(n=Count("pk")))
    lists = json.loads("[" + ",".join(t or "[]" for t, _n in grouped) + "]")
    for tags, (_text, n) in zip(lists, grouped, strict=True):
        for tag in set(tags or []):
            tally[tag] += n


def counts(f: InboxFilter) -> dict[str, list[tuple[str, int]]]:
    """For each filter, its values with the number of pending proposals that
    would match if it were chosen, keeping the *other* active filters (so the
    numbers say what a click will show). Values with none are left out, except
    the one chosen.

    Facets whose own filter is not chosen all count over the same proposals
    (``matching(f)``), so they share their queries; each chosen facet adds its
    own (its counts drop its own filter). Unfiltered: two grouped queries."""
    tallies: dict[str, Counter[str]] = {facet: Counter() for facet in FACETS}
    bases: dict[InboxFilter, list[str]] = {}
    for facet in FACETS:
        bases.setdefault(f.without(facet), []).append(facet)
    for base, facets in bases.items():
        rows = matching(base).order_by()
        columns = [facet for facet in facets if facet != "tag"]
        if columns:
            _tally_columns(rows, columns, tallies)
        if "tag" in facets:
            _tally_tags(rows, tallies["tag"])
    out: dict[str, list[tuple[str, int]]] = {}
    for facet, tally in tallies.items():
        chosen = getattr(f, facet)
        if chosen and chosen not in tally:
            tally[chosen] = 0
        order = ProposalAction.values if facet == "action" else sorted(tally)
        if facet == "tag":  # many tags: the commonest first
            order = sorted(tally, key=lambda t: (-tally[t], t))
        out[facet] = [(value, tally[value]) for value in order if value in tally]
    return out
