"""Precision and recall of the contradiction rule, and of the duplicate offer,
on labelled pairs (tests/data/quality_pairs.jsonl): what ``manage.py quality
--eval`` prints.

Each pair is two texts with a label (contradiction, paraphrase,
different_subject, related, unrelated) and a split (dev: the rules and
thresholds were tuned on it; test: held out, reported, not tuned on). A pair
is flagged when the shared rule (quality.contradiction_reasons) gives a
reason at the similarity the embedder gives the two texts, exactly as the
check and the inbox's hints do; it is offered as a duplicate when
quality.duplicate_like holds. Only paraphrases are duplicates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import index, quality
from .embeddings import Embedder

LABELS = ("contradiction", "paraphrase", "different_subject", "related", "unrelated")
SPLITS = ("dev", "test")


@dataclass
class Pair:
    label: str
    split: str
    a: str
    b: str
    similarity: float = 0.0
    reasons: list[str] = field(default_factory=list)
    duplicate: bool = False


@dataclass
class Score:
    flagged: int = 0
    right: int = 0  # flagged and labelled so
    wanted: int = 0  # labelled so

    @property
    def precision(self) -> float:
        return self.right / self.flagged if self.flagged else 1.0

    @property
    def recall(self) -> float:
        return self.right / self.wanted if self.wanted else 1.0


def load(path: Path) -> list[Pair]:
    """The labelled pairs; a bad line stops with its number and what is allowed."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            label, split = row["label"], row.get("split", "test")
            texts = [f"{row[side]['title']}\n{row[side]['body']}" for side in ("a", "b")]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{path}:{number}: not a pair ({exc}); each line is a JSON object "
                '{"label", "split", "a": {"title", "body"}, "b": {"title", "body"}}'
            ) from exc
        if label not in LABELS or split not in SPLITS:
            raise ValueError(
                f"{path}:{number}: label {label!r} / split {split!r}: labels are "
                f"{', '.join(LABELS)}; splits are {', '.join(SPLITS)}"
            )
        pairs.append(Pair(label, split, texts[0], texts[1]))
    return pairs


def evaluate(pairs: list[Pair], embedder: Embedder, threshold: float | None = None) -> list[Pair]:
    """Fill in each pair's similarity (the first chunk of each text, as the
    check compares records), reasons and duplicate offer."""
    texts = []
    for pair in pairs:
        for text in (pair.a, pair.b):
            title, _, body = text.partition("\n")
            texts.append(index.chunk_texts(title, body, [])[0])
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    vectors = vectors / norms
    for n, pair in enumerate(pairs):
        pair.similarity = float(vectors[2 * n] @ vectors[2 * n + 1])
        pair.reasons = quality.contradiction_reasons(pair.a, pair.b, pair.similarity, threshold)
        pair.duplicate = quality.duplicate_like(pair.a, pair.b, pair.similarity)
    return pairs


def scores(pairs: list[Pair]) -> dict[str, dict[str, Score]]:
    """{split or "all": {"contradiction": Score, "duplicate": Score}}."""
    out: dict[str, dict[str, Score]] = {}
    for pair in pairs:
        for split in (pair.split, "all"):
            table = out.setdefault(split, {"contradiction": Score(), "duplicate": Score()})
            for name, flagged, wanted in (
                ("contradiction", bool(pair.reasons), pair.label == "contradiction"),
                ("duplicate", pair.duplicate, pair.label == "paraphrase"),
            ):
                score = table[name]
                score.flagged += flagged
                score.wanted += wanted
                score.right += flagged and wanted
    return out
