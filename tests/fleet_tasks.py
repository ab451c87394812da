"""Module-level per-capture functions for the fleet engine's tests: Dask workers import them by
name. What each does depends on the capture's file name, so one map can mix outcomes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from accelview.model.errors import CaptureError


def probe(path: str) -> dict:
    """The file's first line and the worker's process id; a file named ``kill*`` ends its worker
    process at once, ``hang*`` sleeps far past any test's timeout, ``bad*`` is unreadable."""
    name = Path(path).name
    if name.startswith("kill"):
        os._exit(3)
    if name.startswith("hang"):
        time.sleep(120)
    if name.startswith("bad"):
        raise CaptureError(path, "not an HDF5 file\nsecond line")
    return {"text": Path(path).read_text().splitlines()[0], "pid": os.getpid()}
