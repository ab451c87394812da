"""Analysis passes on hand-made traces: gap causes, op labels, findings, the analyze command."""

from __future__ import annotations

import json

import numpy as np
from accelview.app.cli.main import main
from accelview.model import TraceBuilder, TrackKind
from accelview.model.analysis.gaps import device_gaps
from accelview.model.analysis.ops import classify_ops
from accelview.model.analysis.report import analyze
from accelview.model.analysis.roles import Roles
from accelview.model.store.writer import write_capture

SPEC = {"compute": {"clock_mhz": 1000, "matrix_tflops": {"bf16": 1000.0}}, "memory": {"hbm_gb_per_s": 1000.0},
        "pcie": {"gen": 4, "lanes": 16, "mps": 256}}


def _base():
    b = TraceBuilder()
    b.metadata["device_spec"] = SPEC
    h = b.add_track("host0", TrackKind.HOST, host="host0")
    th = b.add_track("main", TrackKind.HOST_THREAD, parent=h, host="host0")
    api = b.add_track("runtime API", TrackKind.RUNTIME_API, parent=th, host="host0")
    q = b.add_track("queue 0", TrackKind.DRIVER_QUEUE, parent=h, device=0)
    pcie = b.add_track("PCIe H2D", TrackKind.PCIE, parent=h, device=0)
    mxu = b.add_track("matrix 0", TrackKind.EXEC_UNIT, parent=h, device=0)
    return b, api, q, pcie, mxu


def _launch(b, api, q, mxu, call_at, op_at, op_dur, name="gemm", args=None):
    call = b.add_slice(api, call_at, 500, f"launch {name}")
    sub = b.add_slice(q, call_at + 400, 50, "submit")
    op = b.add_slice(mxu, op_at, op_dur, name, args=args)
    b.add_flow(call, sub)
    b.add_flow(sub, op)
    return op


def test_gap_causes_host_pcie_and_sync():
    b, api, q, pcie, mxu = _base()
    _launch(b, api, q, mxu, 0, 1_000, 1_000)
    _launch(b, api, q, mxu, 5_000, 5_500, 1_000)  # host late: gap 2000-5500 → host
    copy_call = b.add_slice(api, 6_000, 300, "memcpy H2D")
    xfer = b.add_slice(pcie, 6_300, 3_000, "H2D", args={"bytes": 1 << 20, "pinned": 1})
    b.add_flow(copy_call, xfer)
    op3 = _launch(b, api, q, mxu, 6_400, 9_400, 1_000)  # waits for the copy: gap 6500-9400 → pcie
    b.add_flow(xfer, op3)
    b.add_slice(api, 10_500, 2_000, "synchronize")  # returns at 12500 while device idle
    _launch(b, api, q, mxu, 12_600, 13_100, 1_000)  # gap 10400-13100 → sync
    gaps = device_gaps(Roles(b.build()))
    got = [(int(s), int(e), str(c)) for s, e, c in zip(gaps.start_ns, gaps.end_ns, gaps.cause, strict=True)]
    assert got == [(2_000, 5_500, "host"), (6_500, 9_400, "pcie"), (10_400, 13_100, "sync")]


def test_ops_labelled_from_counters():
    b, api, q, _pcie, mxu = _base()
    # 1 µs busy each at 1 GHz = 1000 cycles; compute: 0.8 PFLOP/s of 1; memory: 0.9 TB/s of 1.
    cyc = {"elapsed_cycles": 1000, "dispatch_cycles": 0, "active_cycles": 1000}
    _launch(b, api, q, mxu, 0, 1_000, 1_000, "gemm", {**cyc, "flops": 8e8, "hbm_read_bytes": 1e5,
                                                      "hbm_write_bytes": 0, "stall_latency_cycles": 0})
    _launch(b, api, q, mxu, 1_500, 2_000, 1_000, "rmsnorm", {**cyc, "flops": 1e6, "hbm_read_bytes": 9e5,
                                                             "hbm_write_bytes": 0, "stall_latency_cycles": 0})
    _launch(b, api, q, mxu, 3_000, 3_500, 1_000, "tiny", {**cyc, "flops": 1e3, "hbm_read_bytes": 1e3,
                                                          "hbm_write_bytes": 0, "stall_latency_cycles": 900})
    t = b.build()
    labels = classify_ops(Roles(t))
    by_name = {t.strings[t.slices.name[s]]: str(lab) for s, lab in zip(labels.slice, labels.label, strict=True)}
    assert by_name == {"gemm": "compute", "rmsnorm": "memory", "tiny": "latency"}


def test_pageable_and_small_transfers_are_found_and_ranked():
    b, api, q, pcie, mxu = _base()
    t = 0
    for i in range(40):  # 40 small pageable copies, device idle meanwhile
        call = b.add_slice(api, t, 9_000, "memcpy H2D")
        x = b.add_slice(pcie, t + 8_000, 1_000, "H2D", args={"bytes": 4096, "pinned": 0, "host_buffer": i})
        b.add_flow(call, x)
        t += 10_000
    _launch(b, api, q, mxu, t, t + 600, 5_000)
    r = analyze(b.build())
    kinds = [f.kind for f in r.findings]
    assert "small-transfers" in kinds and "pageable-transfer" in kinds
    assert r.findings[0].time_lost_ns >= r.findings[-1].time_lost_ns
    pageable = next(f for f in r.findings if f.kind == "pageable-transfer")
    assert len(pageable.slices) == 40 and pageable.time_lost_ns > 300_000
    # Sizes and rates print as everywhere else (decimal prefixes, three significant digits).
    assert pageable.summary.startswith("40 transfers (164 kB) used pageable host memory")
    small = next(f for f in r.findings if f.kind == "small-transfers")
    assert small.summary.startswith("40 transfers of 4.10 kB on average reached 4.10 GB/s: ")


def test_redundant_uploads_of_one_buffer():
    b, _api, _q, pcie, _mxu = _base()
    for i in range(6):
        b.add_slice(pcie, i * 100_000, 50_000, "H2D", args={"bytes": 1 << 20, "pinned": 1, "host_buffer": 7})
    r = analyze(b.build())
    red = next(f for f in r.findings if f.kind == "redundant-transfer")
    assert len(red.slices) == 5
    assert red.summary.endswith("(5.24 MB again)")


def test_analyze_command_json_is_stable(tmp_path, capsys):
    b, api, q, _pcie, mxu = _base()
    for i in range(20):
        _launch(b, api, q, mxu, i * 10_000, i * 10_000 + 8_000, 1_000)
    path = tmp_path / "a.h5"
    write_capture(b.build(), path)
    assert main(["analyze", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"ops", "gaps", "phases", "findings"}
    assert len(out["ops"]) == 20
    assert set(out["ops"][0]) == {"slice", "label", "confidence", "compute_sol", "memory_sol", "evidence"}
    assert len(out["gaps"]) == 19 and {g["cause"] for g in out["gaps"]} == {"host"}
    f = out["findings"][0]
    assert f["kind"] == "launch-bound"
    assert set(f) >= {"kind", "severity", "start_ns", "end_ns", "time_lost_ns", "summary", "suggestion", "slices"}
    assert main(["analyze", str(path)]) == 0
    assert "launch-bound" in capsys.readouterr().out


def test_breakdown_never_exceeds_device_time():
    b, _api, _q, _pcie, mxu = _base()
    mxu2 = b.add_track("matrix 1", TrackKind.EXEC_UNIT, device=0)
    b.add_slice(mxu, 0, 1_000, "a")
    b.add_slice(mxu2, 0, 1_000, "b")
    r = analyze(b.build())
    assert sum(r.phases[0].breakdown_ns.values()) == 1_000
    assert np.all(r.ops.confidence <= 1)


def test_phases_from_host_annotations_break_down_their_own_window():
    b, api, q, _pcie, mxu = _base()
    thread = 1  # the "main" host thread of _base
    b.add_slice(thread, 0, 10_000, "prefill")
    b.add_slice(thread, 10_000, 10_000, "decode")
    b.add_slice(thread, 100, 50, "tokenize")  # phases are annotations that enclose work
    b.add_slice(thread, 10_100, 50, "sample")
    b.add_slice(thread, 30_000, 10, "no children: not a phase")
    cyc = {"elapsed_cycles": 1000, "dispatch_cycles": 0, "active_cycles": 1000, "stall_latency_cycles": 0}
    _launch(b, api, q, mxu, 0, 1_000, 8_000, "gemm", {**cyc, "flops": 8e9, "hbm_read_bytes": 1e5,
                                                      "hbm_write_bytes": 0})
    _launch(b, api, q, mxu, 15_000, 16_000, 2_000, "norm", {**cyc, "flops": 1e3, "hbm_read_bytes": 1.8e6,
                                                             "hbm_write_bytes": 0})
    r = analyze(b.build())
    by_name = {p.name: p for p in r.phases}
    assert set(by_name) == {"whole run", "prefill", "decode"}
    # The device idled 9,000-16,000 waiting for the host: 1,000 of it in prefill, 6,000 in decode.
    assert by_name["prefill"].breakdown_ns == {"compute": 8_000, "host": 1_000}
    assert by_name["decode"].breakdown_ns == {"memory": 2_000, "host": 6_000}
    assert by_name["prefill"].verdict == "compute" and by_name["decode"].verdict == "host"


def test_analyze_a_real_pytorch_trace(shared_traces, capsys):
    path = shared_traces / "kineto" / "a100_2rank_nccl_rank0.json.gz"
    assert main(["analyze", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    steps = [p["name"] for p in out["phases"] if p["name"].startswith("ProfilerStep#")]
    assert steps == ["ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6"]
    gpu = out["gpu"]
    assert gpu["temporal_breakdown"][0]["rank"] == 0
    assert any(k["kind"] == "communication" for k in gpu["kernels"])
    from accelview.model.analysis.op_classes import CLASSES, EVIDENCE
    assert all(op["label"] in CLASSES and op["evidence"] in EVIDENCE for op in out["ops"])
    # Without counters, the NCCL kernels are communication, by their kind, and next to nothing is unknown.
    assert {op["label"] for op in out["ops"] if op["evidence"] == "kind"} >= {"communication"}
    assert sum(op["label"] == "unknown" for op in out["ops"]) < len(out["ops"]) / 10
