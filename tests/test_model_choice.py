"""Choosing the embedding model by name (VETTED_MODEL), assembling the
optional MPNet model from its split wheels with every hash checked, and its
ONNX export giving torch's vectors."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from retrieval import index, model_packages, onnx_export
from retrieval.embeddings import FakeEmbedder, model_identity
from retrieval.index import IndexModelMismatch
from retrieval.model_packages import SplitModel

PROJECT = Path(__file__).resolve().parent.parent


def _mpnet_installed() -> bool:
    try:
        for distribution, _, _ in model_packages.MPNET_PACKAGE.parts:
            metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


needs_mpnet = pytest.mark.skipif(
    not _mpnet_installed(),
    reason="the optional all-mpnet-base-v2 wheels are not installed (make install-mpnet, docs/models.md)",
)


# --------------------------------------------------------------------------- the setting


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"VETTED_MODEL": "bert-large"}, "VETTED_MODEL='bert-large' is not allowed; use one of: minilm, mpnet."),
        (
            {"VETTED_MODEL": "mpnet", "VETTED_MODEL_PATH": "/tmp/some-model"},
            "VETTED_MODEL and VETTED_MODEL_PATH are both set",
        ),
    ],
)
def test_a_bad_model_choice_stops_the_process_naming_what_is_allowed(tmp_path, env, message):
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", "VETTED_HOME": str(tmp_path)}
    environment.pop("VETTED_MODEL_PATH", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=PROJECT,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert message in done.stderr


def test_an_unknown_model_name_is_refused_naming_the_allowed_ones():
    with pytest.raises(ImproperlyConfigured, match=r"'e5' is unknown; use one of: minilm, mpnet"):
        model_identity("e5")


def test_each_named_model_records_its_own_name(monkeypatch, settings, tmp_path):
    monkeypatch.setattr(model_packages, "model_folder", lambda package, home: tmp_path / package.folder)
    settings.VETTED_MODEL_PATH, settings.VETTED_MODEL_NAME = None, ""
    settings.VETTED_MODEL = "mpnet"
    assert model_identity() == (tmp_path / "all-mpnet-base-v2", "all-mpnet-base-v2")
    settings.VETTED_MODEL = "minilm"
    assert model_identity()[1] == "all-MiniLM-L6-v2"
    assert model_identity("mpnet")[1] == "all-mpnet-base-v2"


@pytest.mark.django_db
def test_switching_the_named_model_is_refused_until_reindex_even_at_one_dimension(make_record):
    # The index keys on the recorded name, not only the dimension: two models
    # of the same size must never share one vector table either.
    make_record(title="Hangar codes", body="The hangar door code rotates every quarter.")
    minilm, mpnet = FakeEmbedder(), FakeEmbedder()
    minilm.name, mpnet.name = model_packages.MODEL_NAMES["minilm"], model_packages.MODEL_NAMES["mpnet"]
    index.sync(minilm)
    with pytest.raises(IndexModelMismatch, match=r"'all-MiniLM-L6-v2'.*'all-mpnet-base-v2'.*reindex"):
        index.ensure_ready(mpnet)


# --------------------------------------------------------------------------- assembling split wheels


def _split(tmp_path: Path, files: dict[str, bytes], pieces: int = 3) -> tuple[SplitModel, list[Path]]:
    """A model folder zipped (plus a file that is not pinned) and cut into parts."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"tiny-model/{name}", data)
        archive.writestr("tiny-model/desktop.ini", b"[.ShellClassInfo]")
        archive.writestr("../outside.txt", b"never unpacked")
    data = buffer.getvalue()
    step = len(data) // pieces + 1
    parts = []
    for n in range(pieces):
        part = tmp_path / "wheels" / f"tiny.zip.{n + 1:03d}"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(data[n * step : (n + 1) * step])
        parts.append(part)
    model = SplitModel(
        name="tiny-model",
        folder="tiny-model",
        parts=tuple(
            (f"tiny-part-{n}", p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for n, p in enumerate(parts)
        ),
        files={name: hashlib.sha256(content).hexdigest() for name, content in files.items()},
        extra="tiny",
    )
    return model, parts


FILES = {"config.json": b'{"model_type": "mpnet"}', "1_Pooling/config.json": b"{}", "model.safetensors": b"w" * 5000}


def test_split_wheels_are_joined_and_only_the_pinned_files_unpacked(tmp_path):
    model, parts = _split(tmp_path, FILES)
    target = tmp_path / "models" / "tiny"
    model_packages.assemble(model, parts, target)
    unpacked = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert unpacked == sorted([*FILES, model_packages.DONE_FILE])
    assert (target / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    assert not (tmp_path / "models" / "outside.txt").exists() and not (tmp_path / "outside.txt").exists()
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["tiny"]  # no temporary folder left


def test_a_part_with_another_hash_is_refused_and_nothing_is_unpacked(tmp_path):
    model, parts = _split(tmp_path, FILES)
    damaged = bytearray(parts[1].read_bytes())
    damaged[10] ^= 0xFF
    parts[1].write_bytes(bytes(damaged))
    target = tmp_path / "models" / "tiny"
    with pytest.raises(ImproperlyConfigured, match=r"tiny\.zip\.002.*does not have the SHA-256 pinned"):
        model_packages.assemble(model, parts, target)
    assert not target.exists()


def test_a_file_that_differs_from_its_published_hash_is_refused(tmp_path):
    model, parts = _split(tmp_path, FILES)
    pins = dict(model.files, **{"model.safetensors": "0" * 64})
    other = SplitModel(model.name, model.folder, model.parts, pins, model.extra)
    target = tmp_path / "models" / "tiny"
    with pytest.raises(ImproperlyConfigured, match=r"model\.safetensors of tiny-model does not have its published"):
        model_packages.assemble(other, parts, target)
    assert not target.exists() and list((tmp_path / "models").iterdir()) == []


def test_missing_wheels_are_named_with_how_to_install_them():
    missing = SplitModel("tiny-model", "tiny-model", (("vetted-no-such-part-001", "x.zip.001", "0" * 64),), {}, "x")
    with pytest.raises(ImproperlyConfigured, match=r"missing vetted-no-such-part-001.*VETTED_MODEL=minilm"):
        model_packages.installed_parts(missing)


def test_the_pins_cover_what_the_embedders_read():
    # tokenizer, configs, pooling and weights: everything read_spec and both embedders open.
    assert {"model.safetensors", "config.json", "modules.json", "1_Pooling/config.json", "tokenizer.json"} <= set(
        model_packages.MPNET_PACKAGE.files
    )
    assert all(len(sha) == 64 for _, _, sha in model_packages.MPNET_PACKAGE.parts)


# --------------------------------------------------------------------------- MPNet on ONNX = MPNet on torch


@pytest.mark.slow
@pytest.mark.model
@needs_mpnet
def test_mpnet_on_onnx_gives_the_torch_vectors(settings):
    from retrieval.embeddings import SentenceTransformerEmbedder, make_embedder
    from retrieval.onnx_embedder import OnnxEmbedder
    from tests.test_embedder_onnx import _varied_texts

    folder = model_packages.model_folder(model_packages.MPNET_PACKAGE, Path(settings.VETTED_HOME))
    spec = onnx_export.read_spec(folder)
    assert spec.inputs == ("input_ids", "attention_mask") and spec.max_seq_length == 384
    onnx = make_embedder("onnx", "mpnet")
    assert isinstance(onnx, OnnxEmbedder)
    torch = SentenceTransformerEmbedder(folder, "all-mpnet-base-v2", threads=0)
    assert onnx.name == torch.name == "all-mpnet-base-v2" and onnx.dimension == torch.dimension == 768
    texts = _varied_texts()
    expected = torch.embed(texts)
    batched = onnx.embed(texts)  # sorted by length, sub-batched, padded with MPNet's <pad>
    cosines = np.sum(batched * expected, axis=1)
    assert cosines.min() >= 0.999, (cosines.min(), texts[int(np.argmin(cosines))][:80])
    sample = texts[:: max(1, len(texts) // 40)]
    single = np.stack([onnx.embed_one(t) for t in sample])
    assert np.sum(single * torch.embed(sample), axis=1).min() >= 0.999
