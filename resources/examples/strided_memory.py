"""Kernels walking HBM with a poor access pattern, next to the same kernel on sequential data:
the strided ones use only part of each HBM burst and take about twice as long.

    accelview profile resources/examples/strided_memory.py -o strided.h5
"""

from __future__ import annotations

from accelview.capture import sim


def run(count: int = 200, elements: int = 1 << 24, run_bytes: int = 32, pattern: str = "strided") -> None:
    """``count`` elementwise kernels, every other one walking HBM in ``pattern`` runs of ``run_bytes``."""
    dev = sim.device(0)
    for i in range(count):
        if i % 2:
            dev.launch("elementwise", name="sequential copy", elements=elements)
        else:
            dev.launch("elementwise", name=f"{pattern} copy", elements=elements, pattern=pattern,
                       run_bytes=run_bytes)
    dev.synchronize()


if __name__ == "__main__":
    run()
