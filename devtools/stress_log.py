"""The log every process of the stress run appends to (agents and the
reviewer alike), in a module of its own so that the reviewer process and the
agents' driver do not import each other."""

from __future__ import annotations

import json
from pathlib import Path


class Log:
    """Append-only JSON lines, flushed per line."""

    def __init__(self, path: Path):
        self.handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - written until the process ends

    def write(self, **item) -> None:
        self.handle.write(json.dumps(item) + "\n")
        self.handle.flush()
