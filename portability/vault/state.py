"""The vault's manifest: whose vault it is and a digest of each file Vetted wrote."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from common.files import write_atomic

MANIFEST = ".vetted-vault.json"


class VaultError(Exception):
    """The folder cannot be used as this person's vault (said for a person)."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(root: Path, person: str) -> dict[str, dict]:
    """``{relative path: {"id": record or proposal id, "sha": digest}}``; refuses another person's vault."""
    path = root / MANIFEST
    if not path.exists():
        if any(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else False:
            raise VaultError(f"{root} is not empty and not a vault; choose an empty folder or an existing vault.")
        return {}
    data = json.loads(path.read_text("utf-8"))
    if data.get("person") != person:
        raise VaultError(f"{root} is {data.get('person')!r}'s vault, not {person!r}'s.")
    return dict(data.get("files") or {})


def save(root: Path, person: str, files: dict[str, dict]) -> None:
    payload = {"format": "vetted-vault", "version": 1, "person": person, "files": dict(sorted(files.items()))}
    write_atomic(root / MANIFEST, json.dumps(payload, indent=1, sort_keys=True) + "\n")
