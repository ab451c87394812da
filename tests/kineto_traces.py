"""The real Kineto traces in ../shared/traces/kineto, each imported once per test session."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from accelview.model import Trace
from accelview.model.importers import import_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "kineto"
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason=f"real traces not found at {TRACES}")


@cache
def imported(name: str) -> Trace:
    """The trace ``name`` (relative to the kineto folder), imported once."""
    return import_trace(TRACES / name)
