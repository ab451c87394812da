"""Synthetic traces for tests, benchmarks and screenshots, built with ``TraceBuilder``.

``demo_trace`` looks like one inference run on the accelerator (host API calls, driver queue,
PCIe, DMA, execution units, counters, flows); ``large_trace`` is many uniform lanes of
millions of slices for the rendering benchmark.
"""

from __future__ import annotations

import numpy as np

from .builder import TraceBuilder
from .schema import TrackKind
from .trace import Trace

KERNELS = ("matmul_qkv", "attention", "softmax", "matmul_out", "layernorm", "matmul_ffn1", "gelu",
           "matmul_ffn2", "residual_add", "rmsnorm")


def demo_trace(steps: int = 12, layers: int = 6, seed: int = 7) -> Trace:
    """A small, realistic-looking capture: ``steps`` decode steps of ``layers`` layers each."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    b.metadata["workload"] = "demo: llm decode"
    host = b.add_track("host0", TrackKind.HOST, host="host0")
    proc = b.add_track("python (pid 4242)", TrackKind.PROCESS, host, host="host0")
    main = b.add_track("MainThread", TrackKind.HOST_THREAD, proc, host="host0")
    loader = b.add_track("dataloader", TrackKind.HOST_THREAD, proc, host="host0")
    queue = b.add_track("driver queue 0", TrackKind.DRIVER_QUEUE, host, host="host0")
    dev = b.add_track("accel0", TrackKind.DEVICE, host="host0", device=0)
    h2d = b.add_track("PCIe H2D", TrackKind.PCIE, dev, device=0)
    d2h = b.add_track("PCIe D2H", TrackKind.PCIE, dev, device=0)
    dma = b.add_track("DMA engine 0", TrackKind.DMA_ENGINE, dev, device=0)
    mxu = b.add_track("matrix engine", TrackKind.EXEC_UNIT, dev, device=0)
    vpu = b.add_track("vector engine", TrackKind.EXEC_UNIT, dev, device=0)
    hbm = b.add_counter_track("HBM bandwidth", "GB/s", "hbm", "HBM read+write bandwidth", dev, device=0)
    util = b.add_counter_track("matrix engine busy", "%", "mxu", "matrix engine utilisation", dev, device=0)
    pcie = b.add_counter_track("PCIe H2D throughput", "GB/s", "pcie", "host-to-device bytes/s", dev, device=0)

    t = 50_000
    corr = 0
    dev_free = t
    samples: dict[int, list[tuple[int, float]]] = {hbm: [], util: [], pcie: []}
    for s in range(steps):
        step_start = t
        b.add_slice(loader, t - 40_000, int(rng.integers(20_000, 35_000)), "prefetch_batch", "data")
        # Upload the step's inputs.
        dur = int(rng.integers(18_000, 30_000))
        corr += 1
        api = b.add_slice(main, t + 2_000, dur, "accelMemcpyAsync", "runtime", corr, {"bytes": 4 << 20, "dir": "H2D"})
        sub = b.add_slice(queue, t + 4_000, 3_000, "submit copy", "driver", corr)
        xfer = b.add_slice(h2d, t + 8_000, 60_000, "H2D 4 MiB", "pcie", corr, {"bytes": 4 << 20, "GB/s": 25.0})
        dmx = b.add_slice(dma, t + 9_000, 58_000, "dma copy", "dma", corr)
        b.add_flow(api, sub)
        b.add_flow(sub, xfer)
        b.add_flow(xfer, dmx)
        samples[pcie] += [(t + 8_000, 24.8), (t + 68_000, 0.0)]
        dev_free = max(dev_free, t + 70_000)
        host_t = t + dur + 4_000
        for layer in range(layers):
            for k in KERNELS:
                corr += 1
                ld = int(rng.integers(3_000, 6_000))
                api = b.add_slice(main, host_t, ld, "accelLaunchKernel", "runtime", corr, {"kernel": k, "layer": layer})
                sub = b.add_slice(queue, host_t + ld // 2, 1_500, f"submit {k}", "driver", corr)
                unit = mxu if k.startswith("matmul") or k == "attention" else vpu
                kd = int(rng.integers(8_000, 40_000) if unit == mxu else rng.integers(2_000, 9_000))
                start = max(dev_free, host_t + ld + 6_000)
                ex = b.add_slice(unit, start, kd, k, "kernel", corr,
                                 {"layer": layer, "flops": int(kd * 1.8e3), "hbm_bytes": int(kd * 900)})
                b.add_flow(api, sub)
                b.add_flow(sub, ex)
                bw = float(rng.uniform(600, 1500) if unit == mxu else rng.uniform(200, 700))
                samples[hbm] += [(start, bw), (start + kd, 40.0)]
                samples[util] += [(start, 95.0 if unit == mxu else 0.0), (start + kd, 0.0)]
                dev_free = start + kd + int(rng.integers(200, 1500))
                host_t += ld + int(rng.integers(1_000, 4_000))
        corr += 1
        sync_end = dev_free + 3_000
        sy = b.add_slice(main, host_t, sync_end - host_t, "accelStreamSynchronize", "runtime", corr)
        rd = b.add_slice(d2h, dev_free, 12_000, "D2H 256 KiB", "pcie", corr, {"bytes": 256 << 10})
        b.add_flow(rd, sy)
        b.add_slice(main, step_start, sync_end + 5_000 - step_start, f"decode step {s}", "step", -1, {"step": s})
        t = sync_end + 30_000
        dev_free = t
    for track, pts in samples.items():
        pts.sort()
        b.add_counters(track, np.array([p[0] for p in pts], np.int64), np.array([p[1] for p in pts]))
    return b.build(source="demo")


def large_trace(n_slices: int, lanes: int = 64, names: int = 40, seed: int = 1, span_ns: int | None = None) -> Trace:
    """``lanes`` device-unit lanes sharing ``n_slices`` back-to-back bursty slices (depth 0)."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    dev = b.add_track("accel0", TrackKind.DEVICE, device=0)
    name_ids = np.array([b.strings.intern(f"{KERNELS[i % len(KERNELS)]}_{i}") for i in range(names)], np.int32)
    cat = b.strings.intern("kernel")
    per = max(n_slices // lanes, 1)
    mean = 1_000 if span_ns is None else max(span_ns // per, 2)
    for lane in range(lanes):
        tr = b.add_track(f"unit {lane}", TrackKind.EXEC_UNIT, dev, device=0)
        dur = rng.integers(1, mean // 2 + 2, per, dtype=np.int64)
        gap = rng.integers(0, mean // 2 + 1, per, dtype=np.int64)
        gap[rng.random(per) < 0.001] += mean * 200  # idle stretches
        start = np.cumsum(dur + gap) - dur
        b.add_slices(tr, start, dur, name_ids[rng.integers(0, names, per)], cat,
                     depth=np.zeros(per, np.uint16))
    return b.build(source="synthetic")
