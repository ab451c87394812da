"""Chrome JSON export: valid Chrome trace events for Perfetto / chrome://tracing, and a round
trip through accelview's importer that keeps lanes, slices, flows, counters, instants, args."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from accelview.model import Trace, TraceBuilder, TrackKind
from accelview.model.export.chrome import export_chrome
from accelview.model.importers import find_importer, import_trace
from factories import empty_trace, tiny_trace
from kineto_traces import imported, needs_traces
from trace_compare import assert_same


def load_json(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.load(f)


def flows_trace() -> Trace:
    """Flows whose ends a timestamp alone would not tell apart: a parent and child starting
    together, and two zero-length slices at one point."""
    b = TraceBuilder()
    proc = b.add_track("proc", TrackKind.PROCESS)
    t = b.add_track("thread", TrackKind.HOST_THREAD, parent=proc)
    g = b.add_track("stream", TrackKind.GPU_STREAM, parent=proc)
    parent = b.add_slice(t, 0, 100, "parent")
    child = b.add_slice(t, 0, 40, "child")
    z1 = b.add_slice(t, 50, 0, "zero-a")
    b.add_slice(t, 50, 0, "zero-b")
    k1 = b.add_slice(g, 10, 5, "k1")
    k2 = b.add_slice(g, 60, 5, "k2")
    b.add_flow(parent, k1, "launch")
    b.add_flow(child, k2, "launch")
    b.add_flow(z1, k2, "other")
    return b.build()


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_round_trip_keeps_everything(tmp_path: Path, suffix: str) -> None:
    trace = tiny_trace()
    out = export_chrome(trace, tmp_path / f"t{suffix}")
    assert find_importer(out).name == "chrome-json"
    back = import_trace(out)
    assert_same(trace, back)
    assert {k: v for k, v in back.metadata.items() if k != "import_stats"} == trace.metadata


def test_flow_bind_points_work_without_accelview_hints(tmp_path: Path) -> None:
    """Other tools bind flows by timestamp: the exported bind points must pick the right slice
    (the parent, not its child starting at the same time)."""
    trace = flows_trace()
    doc = load_json(export_chrome(trace, tmp_path / "f.json"))
    plain = [{k: v for k, v in e.items() if k not in ("xslice", "correlation")} for e in doc["traceEvents"]]
    (tmp_path / "plain.json").write_text(json.dumps({"traceEvents": plain}))
    back = import_trace(tmp_path / "plain.json")
    names = {(back.name(back.slices.name[s]), back.name(back.slices.name[d])) for s, d in
             zip(back.flows.src, back.flows.dst, strict=True)}
    assert {("parent", "k1"), ("child", "k2")} <= names
    assert_same(trace, import_trace(export_chrome(trace, tmp_path / "f2.json")))  # with hints: exact


def test_export_is_valid_chrome_json(tmp_path: Path) -> None:
    trace = tiny_trace()
    doc = load_json(export_chrome(trace, tmp_path / "t.json.gz"))
    events = doc["traceEvents"]
    phases = Counter(e["ph"] for e in events)
    assert phases["X"] == len(trace.slices) and phases["C"] == len(trace.counters)
    assert phases["s"] == phases["f"] == len(trace.flows) and phases["i"] == len(trace.instants)
    for e in events:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], int | float) and e["ts"] >= 0
    lanes = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"runtime API", "queue 0", "PCIe H2D", "matrix 0"} <= lanes
    assert all(e.get("bp") == "e" for e in events if e["ph"] == "f")
    assert doc["displayTimeUnit"] == "ns"


def test_empty_trace_exports(tmp_path: Path) -> None:
    back = import_trace(export_chrome(empty_trace(), tmp_path / "e.json"))
    assert len(back.slices) == 0 and len(back.tracks) == 0


@needs_traces
def test_round_trip_of_a_real_kineto_trace(tmp_path: Path) -> None:
    trace = imported("a100_2rank_nccl_rank0.json.gz")
    back = import_trace(export_chrome(trace, tmp_path / "k.json.gz"))
    assert_same(trace, back)
    assert back.metadata["ranks"] == trace.metadata["ranks"]


def test_op_counters_travel_as_arguments_of_their_slices(tmp_path: Path) -> None:
    """A simulated capture's per-op counters (op_counters) are exported as their slices' args;
    imported back they are arguments, and the analysis reads the same numbers."""
    import numpy as np
    from accelview.capture import sim
    from accelview.model.analysis.metrics.counters import arg_columns

    with sim.session(seed=2) as s:
        dev = sim.device(0)
        for m in (8, 64, 512):
            dev.launch("gemm", m=m, n=1024, k=1024)
        dev.synchronize()
    trace = s.trace()
    assert len(trace.tables["op_counters"]) == 3
    back = import_trace(export_chrome(trace, tmp_path / "sim.json"))
    keys = ("elapsed_cycles", "flops", "burst_efficiency")

    def ops(t: Trace) -> list[tuple]:
        ids = np.flatnonzero([t.name(n) == "gemm" for n in t.slices.name.tolist()])
        a = arg_columns(t, keys, ids)
        return sorted(zip(t.slices.start_ns[ids].tolist(), *(a[k].tolist() for k in keys), strict=True))

    assert len(ops(trace)) == 3 and ops(back) == ops(trace)
    assert all(v > 0 for row in ops(trace) for v in row[1:])


def test_export_without_counters_keeps_what_a_profiler_records(tmp_path: Path) -> None:
    """Without counters: no sampled counters, no measured bytes or cycles; each op keeps its name
    and shape arguments, and its FLOPs move to the host call that launched it (as PyTorch's
    with_flops records them)."""
    from accelview.capture import sim

    with sim.session(seed=2) as s:
        dev = sim.device(0)
        dev.launch("gemm", m=64, n=1024, k=1024)
        dev.synchronize()
    trace = s.trace()
    back = import_trace(export_chrome(trace, tmp_path / "bare.json", counters=False))
    assert len(trace.counters) > 0 and len(back.counters) == 0 and len(back.counter_tracks) == 0
    gemm = [i for i in range(len(back.slices)) if back.name(int(back.slices.name[i])) == "gemm"]
    assert len(gemm) == 1
    args = back.slice_args(gemm[0])
    assert args == {"op": "gemm", "m": 64, "n": 1024, "k": 1024, "dtype": "bf16"}
    with_flops = [i for i in range(len(back.slices)) if "flops" in back.slice_args(i)]
    assert [back.slice_args(i)["flops"] for i in with_flops] == [2.0 * 64 * 1024 * 1024]
    assert back.tracks.kind[back.slices.track[with_flops[0]]] == TrackKind.RUNTIME_API
