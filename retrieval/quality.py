"""The quality check: flags what looks wrong in a memory, decides nothing.

Findings, each with the records involved, why it was flagged and the
reviewer's suggested next step:

- possible contradictions: two current records in the same space that are
  close in meaning (cosine of their embeddings) yet differ in a way that
  matters, one detail in the place of another (numbers, versions, dates,
  weekdays, names, opposite words) or a negation on one side only
  (retrieval.quality_rules, measured by ``manage.py quality --eval``).
  Paraphrases and the same statement about another client or service are
  not flagged;
- broken supersession: a superseded record without a successor, a successor
  that does not point back, or a loop;
- retire proposals and other proposals pending for long;
- overdue records, and records edited since approval (checksum mismatch);
- index drift (retrieval.index.check).

Everything is read-only. Records outside the requested spaces are never
read into a finding, so a team report cannot mention personal content.

An agent's report (``run(agent=...)``) holds only what the agent may know:
contradictions among records it can receive, its own proposals, and the
records withheld from it by id only (no title: an edited record's title is
text nobody approved). Index drift spans every space and is the reviewer's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from reviews.models import Agent, Proposal, ProposalAction, ProposalState, Record, RecordStatus
from reviews.space_access import space_slugs

from . import index, tables
from .embeddings import Embedder, get_embedder
from .quality_rules import Comparison, Text, compare, differences, parse

__all__ = ["Comparison", "compare", "compare_pair", "contradiction_reasons", "differences", "duplicate_like", "run"]

# Records at least this similar (cosine, all-MiniLM-L6-v2) are "about the
# same thing"; below it two records may differ freely. Chosen on the seeded
# set in tests/data/quality_pairs.jsonl (see tests/test_quality.py).
CONTRADICTION_SIMILARITY = 0.6
# Two texts at least this similar, that neither contradict nor name different
# subjects, say one thing: the inbox offers merge / reject-as-duplicate only
# then. Chosen on the dev half of tests/data/quality_pairs.jsonl: the lowest
# value with every offer a true duplicate was 0.70 (a loosely related pair sat at
# 0.69), plus a 0.05 margin; see docs/reviewer-hints.md for both halves.
DUPLICATE_SIMILARITY = 0.75
NEIGHBOURS = 8  # candidates per record
STALE_DAYS = 14

# Finding kinds, in the order reports list them, with their headings.
LABELS = {
    "possible_contradiction": "Possible contradictions",
    "broken_supersession": "Broken supersession",
    "supersession_loop": "Supersession loops",
    "stale_retirement": "Retirements waiting too long",
    "stale_proposal": "Proposals waiting too long",
    "overdue": "Overdue for review",
    "edited_since_approval": "Edited since approval",
    "index_drift": "Index drift",
}


@dataclass
class Finding:
    kind: str
    why: str
    suggestion: str
    records: list[str] = field(default_factory=list)
    proposals: list[str] = field(default_factory=list)
    space: str = ""
    similarity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.similarity is None:
            data.pop("similarity")
        return data


@dataclass
class Report:
    spaces: list[str]
    findings: list[Finding]
    checked_records: int
    # Findings of a kind beyond the report's limit: counted, not listed.
    omitted: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.kind] = counts.get(finding.kind, 0) + 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        counts = self.counts()
        for kind, more in self.omitted.items():
            counts[kind] = counts.get(kind, 0) + more
        return {
            "spaces": self.spaces,
            "checked_records": self.checked_records,
            "counts": counts,
            "omitted": self.omitted,
            "findings": [f.as_dict() for f in self.findings],
        }


# --------------------------------------------------------------------------- contradiction signals


def _title(record: Record) -> str:
    """A record's title as approved: findings reach agents (quality_check),
    so never text changed outside Vetted (the id when no approved copy is kept)."""
    approved = record.approved_version()
    return approved["title"] if approved else record.public_id


def _text(record: Record) -> str:
    return f"{record.title}\n{record.body}"


def contradiction_reasons(a: str, b: str, similarity: float, threshold: float | None = None) -> list[str]:
    """The check's rule for one pair of texts (e.g. a proposal and a record,
    for the inbox's hint): what differs between them if they are at least
    ``threshold`` similar (default VETTED_CONTRADICTION_SIMILARITY), else
    nothing. Empty means "not a possible contradiction"."""
    return compare_pair(a, b, similarity, threshold).reasons


def compare_pair(a: str, b: str, similarity: float, threshold: float | None = None) -> Comparison:
    """contradiction_reasons with the rest of the comparison: whether the two
    texts are about different subjects (never offered as duplicates)."""
    limit = settings.VETTED_CONTRADICTION_SIMILARITY if threshold is None else threshold
    found = compare(a, b)
    if similarity < limit:
        found.reasons = []
    return found


def duplicate_like(a: str, b: str, similarity: float) -> bool:
    """Close enough to be one piece of knowledge: at least DUPLICATE_SIMILARITY,
    nothing that contradicts, and not the same statement about another subject.
    Only then does the inbox offer "merge into" or "reject as duplicate of"."""
    if similarity < DUPLICATE_SIMILARITY:
        return False
    found = compare(a, b)
    return not found.reasons and not found.different_subject


# --------------------------------------------------------------------------- checks


def _record_vectors(records: list[Record], embedder: Embedder) -> np.ndarray:
    """One unit vector per record: its first chunk's stored embedding (title,
    tags and the start of the body), embedded now if the index lacks it."""
    by_id = {}
    ids = [r.pk for r in records]
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join(["%s"] * len(batch))
            cursor.execute(
                # The first title+body chunk (seq 0), never the body-only vector.
                f"SELECT record_id, embedding FROM {tables.CHUNKS} WHERE record_id IN ({marks}) "
                f"AND embedding IS NOT NULL AND seq >= 0 ORDER BY record_id, seq",
                batch,
            )
            for record_id, blob in cursor.fetchall():
                if record_id not in by_id and len(blob) == 4 * embedder.dimension:
                    by_id[record_id] = np.frombuffer(blob, dtype=np.float32)
    missing = [r for r in records if r.pk not in by_id]
    if missing:
        fresh = embedder.embed([index.chunk_texts(r.title, r.body, r.tags)[0] for r in missing])
        for record, vector in zip(missing, fresh, strict=True):
            by_id[record.pk] = np.asarray(vector, dtype=np.float32)
    matrix = np.stack([by_id[r.pk] for r in records]) if records else np.zeros((0, embedder.dimension), np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = matrix / norms
    return unit


def contradictions(
    records: list[Record],
    embedder: Embedder,
    *,
    threshold: float = CONTRADICTION_SIMILARITY,
) -> list[Finding]:
    findings = []
    by_space: dict[str, list[Record]] = {}
    for record in records:
        by_space.setdefault(record.space, []).append(record)
    for space, group in sorted(by_space.items()):
        if len(group) < 2:
            continue
        matrix = _record_vectors(group, embedder)
        features: dict[int, Text] = {}
        seen = set()
        for start in range(0, len(group), 512):
            sims = matrix[start : start + 512] @ matrix.T
            for row, similarities in enumerate(sims):
                i = start + row
                similarities[i] = -1.0
                k = min(NEIGHBOURS, len(group) - 1)
                for j in np.argpartition(-similarities, k - 1)[:k]:
                    j = int(j)
                    similarity = float(similarities[j])
                    pair = (min(i, j), max(i, j))
                    if similarity < threshold or pair in seen:
                        continue
                    seen.add(pair)
                    a, b = group[pair[0]], group[pair[1]]
                    for n, record in zip(pair, (a, b), strict=True):
                        if n not in features:
                            features[n] = parse(_text(record))
                    reasons = differences(features[pair[0]], features[pair[1]])
                    if reasons:
                        findings.append(
                            Finding(
                                kind="possible_contradiction",
                                space=space,
                                similarity=round(similarity, 3),
                                records=[a.public_id, b.public_id],
                                why=f"'{_title(a)}' and '{_title(b)}' are about the same thing "
                                f"(similarity {similarity:.2f}) but {'; '.join(reasons)}",
                                suggestion="Read both: retire the one that no longer holds, "
                                "or revise one so they agree.",
                            )
                        )
    findings.sort(key=lambda f: -(f.similarity or 0))
    return findings


def _titled(record: Record) -> str:
    return f"'{_title(record)}'"


def _by_id(record: Record) -> str:
    return record.public_id


def supersession_problems(spaces: list[str], name: Callable[[Record], str] = _titled) -> list[Finding]:
    findings = []
    superseded = Record.objects.filter(status=RecordStatus.SUPERSEDED, space__in=spaces).select_related("superseded_by")
    for record in superseded:
        successor = record.superseded_by
        if successor is None:
            findings.append(
                Finding(
                    kind="broken_supersession",
                    space=record.space,
                    records=[record.public_id],
                    why=f"{name(record)} is superseded but names no successor",
                    suggestion="Retire it, or revise it again so a current version exists.",
                )
            )
        elif successor.supersedes_id != record.pk:
            findings.append(
                Finding(
                    kind="broken_supersession",
                    space=record.space,
                    records=[record.public_id] + ([successor.public_id] if successor.space in spaces else []),
                    why=f"{name(record)} names a successor that does not point back to it",
                    suggestion="Check the history of both records in the admin.",
                )
            )
    # Loops: follow superseded_by from every superseded record in space.
    links = dict(Record.objects.filter(superseded_by__isnull=False).values_list("pk", "superseded_by_id"))
    public = dict(Record.objects.filter(space__in=spaces).values_list("pk", "public_id"))
    reported = set()
    for start in list(links):
        if start not in public:
            continue
        path: list[int] = []
        node = start
        while node in links and node not in path and len(path) <= len(links):
            path.append(node)
            node = links[node]
        if node in path:
            loop = frozenset(path[path.index(node) :])
            if loop not in reported:
                reported.add(loop)
                findings.append(
                    Finding(
                        kind="supersession_loop",
                        records=sorted(public[n] for n in loop if n in public),
                        why="these records supersede each other in a loop, so none is current",
                        suggestion="Retire all but one and revise that one; the audit log shows how it happened.",
                    )
                )
    return findings


def pending_too_long(spaces: list[str], stale_days: int = STALE_DAYS, agent: Agent | None = None) -> list[Finding]:
    """Proposals pending for long; with ``agent``, only its own."""
    cutoff = timezone.now() - timedelta(days=stale_days)
    findings = []
    old = (
        Proposal.objects.filter(state=ProposalState.PENDING, created_at__lt=cutoff)
        .select_related("target", "agent")
        .order_by("created_at")
    )
    if agent is not None:
        old = old.filter(agent=agent)
    for proposal in old:
        target = proposal.target
        space = target.space if target is not None else proposal.space
        if space not in spaces:
            continue
        days = (timezone.now() - proposal.created_at).days
        kind = "stale_retirement" if proposal.action == ProposalAction.RETIRE else "stale_proposal"
        # A retirement or dispute has no title of its own: the agent sees its
        # target by id (it may be withheld from the agent by now).
        title = proposal.title or (_title(target) if target is not None and agent is None else "")
        title = f"'{title}'" if title else (target.public_id if target is not None else proposal.public_id)
        findings.append(
            Finding(
                kind=kind,
                space=space,
                proposals=[proposal.public_id],
                records=[proposal.target.public_id] if proposal.target is not None else [],
                why=f"{proposal.action} proposal {title} from "
                f"{proposal.agent.name if proposal.agent is not None else 'a person'} has waited {days} days",
                suggestion="Decide it in the inbox: accept, revise or reject.",
            )
        )
    return findings


def record_state_problems(records: list[Record], name: Callable[[Record], str] = _titled) -> list[Finding]:
    today = timezone.localdate()
    findings = []
    for record in records:
        if record.current_checksum() != record.approved_checksum:
            findings.append(
                Finding(
                    kind="edited_since_approval",
                    space=record.space,
                    records=[record.public_id],
                    why=f"{name(record)} changed after approval (checksum mismatch); agents do not get it",
                    suggestion="Restore the approved text or approve the current text (the record's "
                    "page, `review restore` / `review approve-current`), or retire it.",
                )
            )
        elif record.status == RecordStatus.APPROVED and record.review_by < today:
            findings.append(
                Finding(
                    kind="overdue",
                    space=record.space,
                    records=[record.public_id],
                    why=f"{name(record)} was due for review on {record.review_by}; agents do not get it",
                    suggestion="Verify it if it still holds, otherwise revise or retire it.",
                )
            )
    return findings


def index_drift(*, detailed: bool) -> list[Finding]:
    report = index.check()
    if report.ok:
        return []
    if not detailed:  # counts and ids span every space: say only that it needs attention
        return [
            Finding(
                kind="index_drift",
                why="the search index needs maintenance",
                suggestion="Ask the reviewer to run `python manage.py check_index --sync`.",
            )
        ]
    return [
        Finding(
            kind="index_drift",
            why=problem,
            suggestion="Run `python manage.py check_index --sync`, or `reindex` if that does not fix it.",
        )
        for problem in report.problems
    ]


def run(
    spaces: Iterable[str] | None = None,
    *,
    embedder: Embedder | None = None,
    full_index_report: bool = True,
    threshold: float | None = None,
    limit: int = 100,
    agent: Agent | None = None,
) -> Report:
    """The whole check over ``spaces`` (default: all). Read-only. At most
    ``limit`` possible contradictions are listed, the most similar first (a
    memory of many look-alike records can yield thousands); the rest are
    counted in ``omitted``. ``limit=0`` lists them all. With ``agent``, the
    agent's view (see the module docstring)."""
    every = space_slugs()
    # None is every space; an empty list is none (a person with no spaces sees nothing, not all).
    wanted = set(every if spaces is None else spaces)
    spaces = [s for s in every if s in wanted]
    embedder = embedder or get_embedder()
    today = timezone.localdate()
    live = list(Record.objects.live().in_spaces(spaces).order_by("pk"))
    if agent is None:
        current = [r for r in live if r.status == RecordStatus.APPROVED and r.current_checksum() == r.approved_checksum]
    else:
        current = [r for r in live if r.withhold_reason(today) is None]
    found = contradictions(current, embedder, threshold=threshold or settings.VETTED_CONTRADICTION_SIMILARITY)
    omitted = {}
    if limit and len(found) > limit:
        omitted["possible_contradiction"] = len(found) - limit
        found = found[:limit]
    name = _titled if agent is None else _by_id
    findings = found
    findings += supersession_problems(spaces, name)
    findings += record_state_problems(live, name)
    findings += pending_too_long(spaces, agent=agent)
    if agent is None:
        findings += index_drift(detailed=full_index_report)
    return Report(
        spaces=spaces, findings=findings, checked_records=len(live) if agent is None else len(current), omitted=omitted
    )
