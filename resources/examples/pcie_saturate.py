"""A weight upload on a copy stream that saturates the PCIe link while compute waits for it.

Each chunk's GEMM waits on an event recorded after the chunk's copy (another stream), so the
matrix engines sit idle until the data has crossed the link. Fix: prefetch the next chunk while
computing on this one, keep weights resident, or send less over the link.

    accelview profile resources/examples/pcie_saturate.py -o upload.h5
"""

from __future__ import annotations

from accelview.capture import sim


def run(nbytes: int = 8 << 30, chunks: int = 16, m: int = 4096) -> None:
    """Upload ``nbytes`` of weights in ``chunks`` on a copy stream; the compute stream waits for each
    chunk's event and then runs a GEMM over it, so compute mostly waits for PCIe."""
    dev = sim.device(0)
    size = nbytes // chunks
    host = sim.host_buffer(size, "int8", pinned=True)
    copy_stream, compute = dev.stream(), dev.stream()
    for _ in range(chunks):
        dev.copy(dev.alloc(size, "int8"), host, stream=copy_stream)
        compute.wait_event(copy_stream.record_event())
        dev.launch("gemm", stream=compute, m=m, n=4096, k=max(1, size // (2 * 4096)))
    dev.synchronize()


if __name__ == "__main__":
    run()
