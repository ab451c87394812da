"""Shared test set-up: Qt runs offscreen (no display needed), the test helpers import as top-level
modules from any subfolder, and the real traces' folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Must happen before anything imports Qt: without a display and without this, Qt aborts (exit 134).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

# factories.py and kineto_traces.py sit here; tests in tests/model/ and tests/app/ import them by name
# whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture
def shared_traces() -> Path:
    """The read-only folder of real traces made by other tools (never copied into the repo)."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"real traces not found at {SHARED_TRACES}")
    return SHARED_TRACES
