"""What Vetted last wrote into each published file: the record ids in its
block and when. Kept in VETTED_HOME (never beside the person's files): a
section missing from the block is told from a record approved since, and a
change is matched only with proposals filed after that write."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from common.files import write_atomic


@dataclass
class Memo:
    records: list[str] = field(default_factory=list)
    written_at: datetime | None = None


def _path(target: Path) -> Path:
    key = hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:24]
    return Path(settings.VETTED_HOME) / "publish" / f"{key}.json"


def load(target: Path) -> Memo:
    try:
        data = json.loads(_path(target).read_text("utf-8"))
        return Memo(records=list(data["records"]), written_at=datetime.fromisoformat(data["written_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return Memo()


def save(target: Path, records: list[str]) -> None:
    path = _path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"path": str(target.resolve()), "records": records, "written_at": timezone.now().isoformat()}
    write_atomic(path, json.dumps(payload, indent=1) + "\n")
