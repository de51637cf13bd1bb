"""Spec lines for ad.lib.linalg (kept apart from tests/specs.py so the two grow independently)."""
LINALG_SPECS: list = []
LINALG_COMPOSITIONS: list = []
