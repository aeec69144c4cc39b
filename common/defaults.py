"""Where the project lives, where the daemon listens by default, and the
named embedding models VETTED_MODEL may choose (the first is the default).

Standard library only: the stdio bridge imports this, and it must start
without Django (see mcp_bridge/stdio/bridge.py)."""

from __future__ import annotations

from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEFAULT_PORT = 8765
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"

# retrieval/model_packages.py says where each one's weights come from.
MINILM, MPNET = "minilm", "mpnet"
MODEL_CHOICES = (MINILM, MPNET)
