"""Synthetic captures of any size, for benchmarks, tests and screenshots, built vectorised.

``synthetic_trace`` and ``large_trace`` make many uniform lanes of any size; ``demo_trace`` a
small capture that looks like one inference run (host calls, queue, PCIe, DMA, units, flows).

The shape follows a real capture: per host a thread with runtime API calls, a driver queue and
PCIe H2D/D2H lanes; per device DMA engines and execution units; API call → submission →
execution chains linked by flows and a shared correlation id; sampled device counters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from accelview.model import Trace, TraceBuilder, TrackKind

_LANE_KINDS = (
    (TrackKind.RUNTIME_API, "runtime API", ("launch", "memcpyAsync", "eventRecord", "streamWait")),
    (TrackKind.DRIVER_QUEUE, "queue 0", ("submit", "doorbell")),
    (TrackKind.PCIE, "PCIe H2D", ("H2D weights", "H2D activations")),
    (TrackKind.PCIE, "PCIe D2H", ("D2H logits",)),
    (TrackKind.DMA_ENGINE, "DMA 0", ("dma copy", "dma fill")),
    (TrackKind.EXEC_UNIT, "matrix 0", ("gemm", "attention", "gemm_qkv", "gemm_out")),
    (TrackKind.EXEC_UNIT, "matrix 1", ("gemm", "attention", "gemm_mlp")),
    (TrackKind.EXEC_UNIT, "vector 0", ("rmsnorm", "softmax", "silu", "add", "rope")),
)
_CHAIN_LANES = (0, 1, 5)  # runtime API → queue → matrix 0 of each group
_COUNTERS = (("HBM read bandwidth", "B/s", "HBM"), ("PCIe H2D bytes", "B", "PCIe"), ("matrix busy", "%", "matrix"))


@dataclass(frozen=True)
class SyntheticSpec:
    """Size and shape of a synthetic capture."""

    n_slices: int = 100_000
    n_lanes: int = 64
    seed: int = 0
    mean_dur_ns: int = 8_000
    flows: bool = True
    counter_period_ns: int = 10_000
    args_every: int = 0  # give every k-th slice an args set (0: none)


def synthetic_trace(spec: SyntheticSpec = SyntheticSpec()) -> Trace:
    """Build a synthetic trace with ``spec.n_slices`` slices over ``spec.n_lanes`` leaf lanes."""
    rng = np.random.default_rng(spec.seed)
    b = TraceBuilder()
    b.metadata.update({"generator": "accelview.capture.synthetic", "seed": spec.seed})
    lanes = _make_lanes(b, spec.n_lanes)
    per_lane = np.full(len(lanes), spec.n_slices // len(lanes))
    per_lane[: spec.n_slices % len(lanes)] += 1
    first_ids: list[np.ndarray] = []
    span = 0
    for lane, ((track, names), n) in enumerate(zip(lanes, per_lane.tolist(), strict=True)):
        name_ids = np.array([b.strings.intern(x) for x in names], dtype=np.int32)
        base = rng.integers(spec.mean_dur_ns // 4, spec.mean_dur_ns * 2, len(names))
        which = np.arange(n) % len(names)
        dur = (base[which] * rng.uniform(0.97, 1.03, n)).astype(np.int64)
        gap = rng.integers(200, spec.mean_dur_ns // 2, n)
        start = np.cumsum(dur + gap) - dur
        args = -1
        if spec.args_every:
            args = np.full(n, -1, np.int32)
            for i in range(0, n, spec.args_every):
                args[i] = b.add_args({"bytes": int(dur[i]) * 64, "stream": i % 4, "op": names[which[i]]})
        # Every 16th op of a group's API, queue and execution lanes forms one correlated chain.
        correlation = np.full(n, -1, np.int64)
        if spec.flows and lane % len(_LANE_KINDS) in _CHAIN_LANES:
            correlation[::16] = (lane // len(_LANE_KINDS)) * 1_000_000_000 + np.arange(0, n, 16)
        first_ids.append(b.add_slices(track, start, dur, name_ids[which], correlation=correlation, args=args,
                                      depth=np.zeros(n, np.uint16)))
        span = max(span, int(start[-1] + dur[-1]) if n else 0)
    if spec.flows:
        # Chain API call → queue submission → execution on each group's first three lanes.
        for g in range(0, len(lanes) - 7, 8):
            api, queue, exe = (first_ids[g + i] for i in _CHAIN_LANES)
            k = min(len(api), len(queue), len(exe))
            _add_flows(b, api[:k:16], queue[:k:16], "submit")
            _add_flows(b, queue[:k:16], exe[:k:16], "execute")
    _add_counters(b, lanes, span, spec, rng)
    return b.build(source="synthetic")


def _make_lanes(b: TraceBuilder, n_lanes: int) -> list[tuple[int, tuple[str, ...]]]:
    lanes = []
    hosts: dict[str, int] = {}
    for g in range(max(1, -(-n_lanes // len(_LANE_KINDS)))):
        host = f"host{g // 2}"  # two devices per host
        if host not in hosts:
            hosts[host] = b.add_track(host, TrackKind.HOST, host=host)
        h = hosts[host]
        thread = b.add_track(f"thread {g}", TrackKind.HOST_THREAD, parent=h, host=host)
        device = b.add_track(f"device {g}", TrackKind.DEVICE, parent=h, host=host, device=g)
        for kind, name, names in _LANE_KINDS:
            if len(lanes) == n_lanes:
                break
            parent = thread if kind in (TrackKind.RUNTIME_API,) else device
            dev = -1 if kind is TrackKind.RUNTIME_API else g
            lanes.append((b.add_track(name, kind, parent=parent, host=host, device=dev), names))
    return lanes


def _add_flows(b: TraceBuilder, src: np.ndarray, dst: np.ndarray, name: str) -> None:
    n = len(src)
    b.add_rows("flows", {"src": src, "dst": dst, "name": np.full(n, b.strings.intern(name), np.int32)})


def _add_counters(b: TraceBuilder, lanes: list, span: int, spec: SyntheticSpec, rng: np.random.Generator) -> None:
    if spec.counter_period_ns <= 0 or span <= 0:
        return
    ts = np.arange(0, span, spec.counter_period_ns, dtype=np.int64)
    phase = np.linspace(0, 12 * np.pi, len(ts))
    for name, unit, block in _COUNTERS:
        track = b.add_counter_track(name, unit, block, f"synthetic {name}", device=0)
        peak = 100.0 if unit == "%" else 4.8e12 if unit == "B/s" else 1 << 20
        values = peak * np.clip(0.5 + 0.4 * np.sin(phase) + rng.normal(0, 0.05, len(ts)), 0, 1)
        b.add_counters(track, ts, values)


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


def main(argv: list[str] | None = None) -> None:
    """``python -m accelview.capture.synthetic OUT.h5 [--slices N] [--lanes L]``: write a synthetic capture."""
    import argparse

    from accelview.model.store.writer import write_capture

    ap = argparse.ArgumentParser(prog="python -m accelview.capture.synthetic", description=main.__doc__)
    ap.add_argument("out")
    ap.add_argument("--slices", type=int, default=20_000)
    ap.add_argument("--lanes", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    a = ap.parse_args(argv)
    spec = SyntheticSpec(n_slices=a.slices, n_lanes=a.lanes, seed=a.seed, args_every=10)
    write_capture(synthetic_trace(spec), a.out, overwrite=a.force)


if __name__ == "__main__":
    main()
