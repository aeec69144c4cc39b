"""The ONNX Runtime embedder: the same vectors as torch, an export cached in
VETTED_HOME and rebuilt when it is stale, partial or corrupt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from retrieval import onnx_embedder as onnx_embedder_module
from retrieval import onnx_export
from retrieval.embeddings import SentenceTransformerEmbedder, default_model_path, make_embedder
from retrieval.index import chunk_texts
from retrieval.onnx_embedder import OnnxEmbedder

PROJECT = Path(__file__).resolve().parent.parent
DATA = PROJECT / "tests" / "data"


def _varied_texts() -> list[str]:
    """A few hundred texts: every chunk of the evaluation corpus (Markdown,
    identifiers, code), queries, and edge cases for the tokenizer."""
    texts: list[str] = []
    for line in (DATA / "eval_corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        texts += chunk_texts(record["title"], record["body"], record.get("tags"))
    queries = [json.loads(line)["query"] for line in (DATA / "eval_queries.jsonl").read_text().splitlines()]
    texts += queries[::3]
    sentence = "The release train leaves every second Tuesday; hotfixes need two approvals. "
    texts += [
        "",
        "   ",
        "x",
        "  Leading and trailing spaces  ",
        sentence * 14,  # ~250 word pieces: just under the 256 limit
        sentence * 15,
        sentence * 40,  # far over it: truncated the same way
        "supercalifragilisticexpialidocious " * 120,  # word pieces, many per word
        "Grüße aus Zürich: die Straße ist gesperrt, naïve façade, crème brûlée, Ångström.",
        "Привет, как дела? Деплой в пятницу запрещён.",
        "東京の本番環境は金曜日にデプロイしません。北京和上海的服务器。",
        "مرحبا بالعالم — النشر يوم الجمعة ممنوع",
        "emoji 🙂🚀🔥 and zero-width\u200bjoiner\u200d and combining e\u0301",
        "ΑΒΓ αβγ — Ελληνικά κείμενα για δοκιμή " * 12,
        "`kubectl rollout restart deploy/billing-api -n prod` && echo $? # INC-4512 v2.13.0",
        "Ünïcödé " * 300,
    ]
    return texts


@pytest.fixture(scope="module")
def onnx_embedder() -> OnnxEmbedder:
    embedder = make_embedder("onnx")  # exports into the test VETTED_HOME on first use
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(default_model_path(), "all-MiniLM-L6-v2", threads=0)


def _cache_entry() -> Path:
    spec = onnx_export.read_spec(default_model_path())
    return onnx_export.entry_dir(Path(settings.VETTED_HOME) / "onnx", "all-MiniLM-L6-v2", onnx_export.fingerprint(spec))


# --------------------------------------------------------------------------- the same vectors


@pytest.mark.model
def test_onnx_vectors_match_torch_within_cosine_0_999_on_varied_texts(onnx_embedder, torch_embedder):
    texts = _varied_texts()
    assert len(texts) >= 300
    expected = torch_embedder.embed(texts)
    batched = onnx_embedder.embed(texts)  # sorted, sub-batched, padded
    one_by_one = np.stack([onnx_embedder.embed_one(t) for t in texts[:: max(1, len(texts) // 60)]])
    assert batched.shape == expected.shape and batched.dtype == np.float32
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(batched * expected, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.999, (cosines.min(), texts[worst][:80])
    single = np.sum(one_by_one * expected[:: max(1, len(texts) // 60)], axis=1)
    assert single.min() >= 0.999


@pytest.mark.model
def test_batched_and_padded_vectors_equal_one_at_a_time_ones(onnx_embedder):
    # Short texts share runs with long ones, so most of their positions are
    # padding: if a padded position reached the mean pooling, their vectors
    # would move far beyond the tolerance (checked at the end).
    sentence = "The release train leaves every second Tuesday; hotfixes need two approvals. "
    texts = [
        t for i in range(6) for t in ("x", f"billing api {i}", sentence * (2 + 4 * i), "", f"note {i}: " + sentence)
    ]
    texts += _varied_texts()[:40]
    assert len(texts) > onnx_embedder_module.BATCH_MIN * 4 and len(texts) > onnx_embedder_module.SUB_BATCH
    batched = onnx_embedder.embed(texts)
    alone = np.stack([onnx_embedder.embed([text])[0] for text in texts])  # one text per run: no padding
    assert np.abs(batched - alone).max() < 1e-5
    assert np.array_equal(batched, onnx_embedder.embed(texts))  # deterministic: the same runs every time
    # The tolerance can see a leak: the same short text, padded to a long one's
    # length with every position counted, is nowhere near its own vector.
    short, long = onnx_embedder._encode(["billing api 0", sentence * 6])
    feed = onnx_embedder._feed([short, long])
    feed["attention_mask"][:] = 1
    leaked = onnx_embedder._query.run([onnx_export.OUTPUT], feed)[0][0]
    assert np.abs(leaked - alone[texts.index("billing api 0")]).max() > 1e-2


@pytest.mark.model
def test_both_embedders_report_one_model_identity(onnx_embedder, torch_embedder):
    # Interchangeable vectors (the test above): switching embedder needs no reindex.
    assert onnx_embedder.name == torch_embedder.name == "all-MiniLM-L6-v2"
    assert onnx_embedder.dimension == torch_embedder.dimension == 384


# --------------------------------------------------------------------------- the cache


@pytest.mark.model
def test_export_is_cached_and_reused_without_exporting_again(onnx_embedder, monkeypatch):
    entry = _cache_entry()
    assert (entry / onnx_export.MODEL_FILE).exists() and (entry / onnx_export.MANIFEST_FILE).exists()
    before = (entry / onnx_export.MODEL_FILE).stat().st_mtime_ns

    def refuse(*args, **kwargs):
        raise AssertionError("exported again although the cache is valid")

    monkeypatch.setattr(onnx_export, "export", refuse)
    again = make_embedder("onnx")
    assert (entry / onnx_export.MODEL_FILE).stat().st_mtime_ns == before
    assert np.allclose(again.embed_one("cache reuse"), onnx_embedder.embed_one("cache reuse"))


def _copied_cache(tmp_path: Path) -> tuple[onnx_export.ModelSpec, Path, Path]:
    """A private cache holding a copy of the session's valid export."""
    spec = onnx_export.read_spec(default_model_path())
    root = tmp_path / "onnx"
    entry = onnx_export.entry_dir(root, "all-MiniLM-L6-v2", onnx_export.fingerprint(spec))
    shutil.copytree(_cache_entry(), entry)
    return spec, root, entry


@pytest.fixture
def counted_export(monkeypatch):
    """Replace the (slow, torch) export by a copy of the known-good file,
    counting calls: what is tested here is detection and the rebuild."""
    good = _cache_entry() / onnx_export.MODEL_FILE
    calls: list[Path] = []

    def fake_export(spec, target):
        calls.append(target)
        shutil.copyfile(good, target)

    monkeypatch.setattr(onnx_export, "export", fake_export)
    return calls


@pytest.mark.model
@pytest.mark.parametrize(
    "damage",
    ["truncated", "flipped byte", "no manifest", "unreadable manifest", "no model file", "other versions"],
)
def test_a_partial_or_corrupt_cache_is_detected_and_rebuilt(onnx_embedder, tmp_path, counted_export, damage):
    spec, root, entry = _copied_cache(tmp_path)
    model, manifest = entry / onnx_export.MODEL_FILE, entry / onnx_export.MANIFEST_FILE
    assert onnx_export.cached_model(spec, "all-MiniLM-L6-v2", root) == model
    assert counted_export == []  # the intact copy is used as it is
    if damage == "truncated":
        with model.open("r+b") as handle:
            handle.truncate(model.stat().st_size // 2)
    elif damage == "flipped byte":
        data = bytearray(model.read_bytes())
        data[len(data) // 2] ^= 0xFF
        model.write_bytes(bytes(data))
    elif damage == "no manifest":
        manifest.unlink()
    elif damage == "unreadable manifest":
        manifest.write_text('{"size": ')
    elif damage == "no model file":
        model.unlink()
    else:
        recorded = json.loads(manifest.read_text())
        recorded["fingerprint"]["torch"] = "1.0.0"
        manifest.write_text(json.dumps(recorded))
    assert onnx_export.problem(entry, onnx_export.fingerprint(spec)) is not None
    assert onnx_export.cached_model(spec, "all-MiniLM-L6-v2", root) == model
    assert len(counted_export) == 1
    assert onnx_export.problem(entry, onnx_export.fingerprint(spec)) is None
    assert not [p for p in entry.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind


@pytest.mark.model
def test_changed_source_weights_get_a_new_export(onnx_embedder, tmp_path, counted_export):
    source = tmp_path / "model"
    shutil.copytree(default_model_path(), source)
    spec = onnx_export.read_spec(source)
    first = onnx_export.cached_model(spec, "all-MiniLM-L6-v2", tmp_path / "onnx")
    weights = source / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a reinstall
    second = onnx_export.cached_model(spec, "all-MiniLM-L6-v2", tmp_path / "onnx")
    assert first != second and len(counted_export) == 2


# --------------------------------------------------------------------------- what is refused


def test_a_model_with_other_pooling_is_refused_for_onnx(tmp_path):
    model = tmp_path / "cls-model"
    (model / "1_Pooling").mkdir(parents=True)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (model / "modules.json").write_text(json.dumps(modules))
    (model / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    with pytest.raises(ImproperlyConfigured, match=r"not plain mean pooling.*VETTED_EMBEDDER=torch"):
        onnx_export.read_spec(model)


def test_an_unknown_embedder_kind_is_refused():
    with pytest.raises(ImproperlyConfigured, match=r"VETTED_EMBEDDER='tensorflow' is not allowed; use one of: onnx"):
        make_embedder("tensorflow")


@pytest.mark.slow
def test_a_bad_vetted_embedder_value_stops_the_process_with_a_clear_message(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_HOME": str(tmp_path)}
    env["VETTED_EMBEDDER"] = "onxx"
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "VETTED_EMBEDDER='onxx' is not allowed; use one of: onnx, torch, sentence-transformers, fake" in done.stderr


@pytest.mark.slow
@pytest.mark.model
def test_the_onnx_embedder_never_imports_torch_once_exported(onnx_embedder):
    # The session's VETTED_HOME holds the export (the fixture made it).
    code = (
        "import sys, django; django.setup()\n"
        "from retrieval.embeddings import get_embedder\n"
        "v = get_embedder().embed(['does this load torch?'])\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "print(v.shape, heavy)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_EMBEDDER": "onnx"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "(1, 384) []"
