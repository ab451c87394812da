"""A host synchronize after every op: the device drains, then waits for the host's next launch.
Fix: synchronise once per step, read results asynchronously, order streams with events.

    accelview profile resources/examples/sync_heavy.py -o sync.h5
"""

from __future__ import annotations

from accelview.capture import sim


def run(count: int = 500, m: int = 1024) -> None:
    """An op and a host synchronize, ``count`` times."""
    dev = sim.device(0)
    for _ in range(count):
        dev.launch("gemm", m=m, n=m, k=m)
        dev.synchronize()


if __name__ == "__main__":
    run()
