"""Synthetic captures of any size, for benchmarks, tests and the demo, built vectorised.

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


def main(argv: list[str] | None = None) -> None:
    """``python -m accelview.capture.synthetic OUT.h5 [--slices N] [--lanes L]``: write a synthetic capture."""
    import argparse

    from accelview.model.capture_writer import write_capture

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
