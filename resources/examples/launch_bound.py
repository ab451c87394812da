"""Thousands of tiny kernels: each runs in about a microsecond, each launch costs the host more,
so the device idles between them. Fix: fuse kernels, batch work, capture the step as a graph.

    accelview profile resources/examples/launch_bound.py -o launches.h5
"""

from __future__ import annotations

from accelview.capture import sim


def run(count: int = 5000, elements: int = 4096) -> None:
    """``count`` tiny elementwise kernels."""
    dev = sim.device(0)
    for _ in range(count):
        dev.launch("elementwise", elements=elements)
    dev.synchronize()


if __name__ == "__main__":
    run()
