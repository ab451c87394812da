"""The script the ``accelview profile`` tests run, and how they find its calls in the capture."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from accelview.model import Trace, TrackKind

SCRIPT = """\
import os, sys
from accelview.capture import sim

def step(dev, w, h):
    dev.copy(w, h)                                  # LINE copy
    dev.launch("gemm", m=64, n=1024, k=1024)        # LINE launch

dev = sim.device(0)
w = dev.alloc((1024, 1024), "bf16")
h = sim.host_buffer((1024, 1024), "bf16")
for i in range(int(sys.argv[1])):
    step(dev, w, h)
dev.synchronize()
print("cwd", os.getcwd(), "argv", sys.argv[1:])
{tail}
"""


def write_script(tmp_path: Path, tail: str = "", name: str = "work.py") -> Path:
    """The script, with ``tail`` (dedented) after its loop; it takes the step count as argv[1]."""
    path = tmp_path / name
    path.write_text(SCRIPT.format(tail=textwrap.dedent(tail)))
    return path


def api_slices(trace: Trace, name: str) -> np.ndarray:
    """Ids of the runtime-API slices called ``name``."""
    kind = trace.tracks.kind[trace.slices.track]
    names = np.array([trace.strings[int(n)] for n in trace.slices.name])
    return np.flatnonzero((kind == TrackKind.RUNTIME_API) & (names == name))
