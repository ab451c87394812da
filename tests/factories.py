"""Small traces for tests, built through TraceBuilder like every producer."""

from __future__ import annotations

from accelview.model import Trace, TraceBuilder, TrackKind


def tiny_trace() -> Trace:
    """One host thread calling into a device: nested API calls, a submission, a PCIe copy, a
    kernel, flows, counters, instants, args, a clock domain, truth, and non-ASCII names."""
    b = TraceBuilder()
    b.metadata.update({"device_spec": {"name": "test card", "pcie_gen": 5, "hbm_bw": 4.8e12}, "note": "µs ✓"})
    host = b.add_track("hôst-α", TrackKind.HOST, host="hôst-α")
    thread = b.add_track("main thread", TrackKind.HOST_THREAD, parent=host, host="hôst-α")
    api = b.add_track("runtime API", TrackKind.RUNTIME_API, parent=thread, host="hôst-α")
    queue = b.add_track("queue 0", TrackKind.DRIVER_QUEUE, parent=host, host="hôst-α", device=0)
    pcie = b.add_track("PCIe H2D", TrackKind.PCIE, parent=host, host="hôst-α", device=0)
    dev = b.add_track("device 0", TrackKind.DEVICE, parent=host, host="hôst-α", device=0, clock=1)
    mxu = b.add_track("matrix 0", TrackKind.EXEC_UNIT, parent=dev, host="hôst-α", device=0, clock=1)
    b.add_clock("host monotonic", reference=True)
    dclk = b.add_clock("device 0 clock", offset_ns=1234.5, drift_ppm=7.5, error_ns=40.0)
    b.add_clock_sample(dclk, 1000, 2_235_000, 1600)
    step = b.add_slice(api, 0, 10_000, "step 0 — décodage", "user")
    copy = b.add_slice(api, 100, 2_000, "memcpyAsync", "runtime", correlation=7,
                       args={"bytes": 1 << 20, "pinned": True, "dir": "H2D", "ratio": 0.5})
    launch = b.add_slice(api, 3_000, 800, "launch", "runtime", correlation=8, args={"op": "gemm"})
    sub = b.add_slice(queue, 3_500, 100, "submit gemm", "driver", correlation=8)
    xfer = b.add_slice(pcie, 400, 40_000, "H2D 1 MiB", "pcie", correlation=7)
    kern = b.add_slice(mxu, 41_000, 5_000, "gemm", "kernel", correlation=8, args={"flops": 2.5e12})
    b.add_flow(copy, xfer, "dma")
    b.add_flow(launch, sub, "submit")
    b.add_flow(sub, kern, "execute")
    b.add_truth_op(kern, "compute")
    b.add_truth_idle(mxu, 0, 41_000, "pcie")
    b.add_truth_clock(dclk, 1200.0, 7.0)
    hbm = b.add_counter_track("HBM read bytes", "B", "HBM", "bytes read from HBM", parent=dev, device=0)
    for i in range(10):
        b.add_counter(hbm, i * 5_000, float(i * i))
    b.add_instant(api, 9_000, "sync point", "runtime", args={"reason": "host wait"})
    assert step >= 0
    return b.build(source="tiny")


def empty_trace() -> Trace:
    """A trace with no rows in any table."""
    return TraceBuilder().build(source="empty")


def busy_trace(outlier_at: int | None = None) -> Trace:
    """2000 1 µs slices over 2 ms on a thread, a 10 s profiler span, and maybe one lone slice."""
    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    th = b.add_track("thread", TrackKind.HOST_THREAD, parent=host, host="h")
    spans = b.add_track("Spans", TrackKind.OTHER, parent=host, host="h")
    b.add_slice(spans, 0, 10_000_000_000, "PyTorch Profiler")
    for i in range(2000):
        b.add_slice(th, 5_000_000_000 + i * 1_000, 1_000, "op")
    if outlier_at is not None:
        b.add_slice(th, outlier_at, 1_000, "lone")
    return b.build(source="busy")
