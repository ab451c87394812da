"""How fast this (shared, drifting) machine runs Python right now, printed beside benchmark
figures so that runs can be compared: the same pure-Python loop took 1.05-1.77 s within one
minute on the development VM on 2 December 2026. Also: compiling accelview to bytecode before
measuring, as an installed package is."""

from __future__ import annotations

import compileall
import time
from pathlib import Path

STEPS = 1_000_000


def _loop() -> float:
    t = time.process_time()
    s = 0
    for i in range(STEPS):
        s += i
    return time.process_time() - t


def reference() -> str:
    """A line naming the CPU time of a fixed 1M-step Python loop (best of 3) and the load."""
    import os

    best = min(_loop() for _ in range(3))
    return f"machine speed     a 1M-step Python loop takes {best * 1000:.0f} ms of CPU (best of 3), " \
           f"load {os.getloadavg()[0]:.2f}"


def compile_accelview() -> None:
    """Compile accelview's modules to bytecode, as installing a package does. Where
    PYTHONDONTWRITEBYTECODE is set (this VM sets it), an editable install would otherwise
    compile every module it imports from source in every process: 0.02-0.05 s that a user's
    installed copy never pays, counted inside the figures."""
    import accelview.model

    root = Path(accelview.model.__file__).parent.parent
    for package in ("model", "capture", "app"):
        compileall.compile_dir(root / package, quiet=1)
