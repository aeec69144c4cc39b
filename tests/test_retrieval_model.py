"""The real embedding model, end to end (loaded from its PyPI package, offline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval import index
from retrieval.embeddings import SentenceTransformerEmbedder, default_model_path
from retrieval.gate import Reader
from retrieval.search import search
from reviews import actions

PROJECT = Path(__file__).resolve().parent.parent
DATA = PROJECT / "tests" / "data"

# Loading torch and the model takes ~5 s: `make test-fast` leaves these out.
pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def model():
    return SentenceTransformerEmbedder(default_model_path(), "all-MiniLM-L6-v2", threads=0)


def test_model_loads_from_the_package_without_network(model):
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert model.dimension == 384
    vectors = model.embed(["The billing API deploys from main.", "Deploys of the billing service happen from main."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > 0.7  # paraphrases are close


@pytest.mark.django_db
def test_paraphrase_finds_the_record_with_the_real_model(model, agent, reviewer):
    wanted = actions.accept_proposal(
        actions.propose_create(
            agent=agent,
            reason="Team agreement",
            kind="decision",
            space="team",
            title="Friday deploy freeze",
            body="Production deploys are frozen on Fridays; ship on Monday to Thursday only.",
            tags=["deploy"],
        ),
        actor=reviewer,
    ).result_record
    actions.accept_proposal(
        actions.propose_create(
            agent=agent,
            reason="Office info",
            kind="fact",
            space="team",
            title="Office plants",
            body="The plants on the third floor get watered by the facilities team every Tuesday.",
            tags=["office"],
        ),
        actor=reviewer,
    )
    index.sync(model)
    response = search(
        "when can't we ship to prod at the end of the week", mode="hybrid", reader=Reader.everything(), embedder=model
    )
    assert response.results[0].record == wanted
    assert index.check(model).ok


@pytest.mark.slow
# The project's set with each embedder (their vectors are the same: the tables
# must be too), and short household notes with the default one.
@pytest.mark.parametrize(("embedder", "corpus"), [("onnx", "eval"), ("torch", "eval"), ("onnx", "notes")])
def test_hybrid_rank1_is_at_least_the_better_single_ranker_on_every_query_type(tmp_path, embedder, corpus):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "VETTED_HOME": str(tmp_path),
        "VETTED_EMBEDDER": embedder,
    }
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "eval_retrieval",
            str(DATA / f"{corpus}_corpus.jsonl"),
            str(DATA / f"{corpus}_queries.jsonl"),
            "--json",
        ],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = json.loads(done.stdout.strip().splitlines()[-1])
    by = {(row["mode"], row["type"]): row for row in table}
    types = {row["type"] for row in table} - {"all"}
    assert types == {"keyword", "identifier", "question", "paraphrase"}
    for qtype in sorted(types):
        hybrid = by[("hybrid", qtype)]["hit@1"]
        best_single = max(by[("keyword", qtype)]["hit@1"], by[("semantic", qtype)]["hit@1"])
        assert hybrid >= best_single, (qtype, by[("keyword", qtype)], by[("semantic", qtype)], by[("hybrid", qtype)])
