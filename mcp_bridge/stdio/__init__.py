"""The stdio bridge (standard library only; see bridge.py)."""
