"""Many small synchronous copies from pageable host memory, each followed by a small kernel.

What to look for: each copy is staged through a bounce buffer by the host (the `staging memcpy`
slices) before the DMA starts, at about half the pinned bandwidth, and pays the link's round
trip; the device idles while the host copies. Fix: pinned buffers, fewer larger copies.

    accelview profile resources/examples/pageable_small.py -o pageable.h5
"""

from __future__ import annotations

from accelview.capture import sim


def run(count: int = 2000, nbytes: int = 65536) -> None:
    """``count`` synchronous H2D copies of ``nbytes`` from pageable memory, each followed by a small op."""
    dev = sim.device(0)
    src, dst = sim.host_buffer(nbytes, "int8", pinned=False), dev.alloc(nbytes, "int8")
    for _ in range(count):
        dev.copy(dst, src)
        dev.launch("elementwise", elements=max(1, nbytes // 2))
    dev.synchronize()


if __name__ == "__main__":
    run()
