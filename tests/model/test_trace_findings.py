"""Findings from a profiler's trace alone (no counters, no device spec): each kind on a small
Kineto trace made to show it, and not on one made not to."""

from __future__ import annotations

import pytest
from accelview.model.analysis.report import analyze
from kineto_docs import KinetoDoc
from kineto_traces import TRACES, imported, needs_traces

GEMM = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>(Params)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _kinds(trace):
    return {f.kind: f for f in analyze(trace).findings}


def _busy_steps(d: KinetoDoc, n: int = 3, step_us: float = 1_000) -> None:
    """``n`` steps, each launching a GEMM that keeps the device busy most of the step."""
    for i in range(n):
        d.step(i * step_us, step_us, i)
        d.launch(i * step_us + 5, 5, i * step_us + 12, step_us - 20, GEMM)


def test_sync_copy_holds_the_host(tmp_path):
    d = KinetoDoc()
    _busy_steps(d)
    for i in range(3):  # a synchronous copy per step waits for the GEMM before it
        d.copy(i * 1_000 + 20, 960, i * 1_000 + 985, 5, "DtoH (Device -> Pinned)", call="cudaMemcpy")
    f = _kinds(d.trace(tmp_path))["sync-copy"]
    assert f.evidence["calls"] == 3 and f.time_lost_ns == 3 * 960_000
    assert "non_blocking" in f.suggestion
    quiet = KinetoDoc()
    _busy_steps(quiet)
    assert "sync-copy" not in _kinds(quiet.trace(tmp_path, "quiet.json"))


def test_sync_calls_in_the_loop(tmp_path):
    d = KinetoDoc()
    for i in range(4):
        d.step(i * 1_000, 1_000, i)
        d.launch(i * 1_000 + 10, 5, i * 1_000 + 20, 100, GEMM)
        d.runtime(i * 1_000 + 30, 400, "cudaStreamSynchronize")
    found = _kinds(d.trace(tmp_path))
    assert found["sync-in-loop"].evidence == {"calls": 4, "steps": 4, "host_blocked_ns": 1_600_000}
    # The device idled most of its span, drained by the syncs: the finding that says so names it.
    assert "mostly drained by synchronisation" in found["host-sync"].summary


def test_launch_and_runtime_outliers(tmp_path):
    d = KinetoDoc()
    d.launch(0, 5, 10, 100, GEMM)
    d.launch(100, 600, 710, 100, GEMM)  # a 600 µs launch call while the device waits
    d.launch(900, 5, 1_500, 100, GEMM)  # issued at 905, started 600 µs later on an idle device
    f = _kinds(d.trace(tmp_path))["launch-outliers"]
    # Both ops started over 100 µs after their call began (HTA's launch delay).
    assert f.evidence == {"runtime_outliers": 1, "launch_delay_outliers": 2}
    # Idle during the slow call beyond 50 µs (150-700), after its return (700-710) and after the
    # late op's launch (905-1500).
    assert f.time_lost_ns == 550_000 + 10_000 + 595_000


def test_starvation_between_steps(tmp_path):
    d = KinetoDoc()
    for i in range(4):  # each step's work is launched 400 µs into it: the device waits at every boundary
        d.step(i * 1_000, 1_000, i)
        d.cpu(i * 1_000 + 1, 390, "DataLoader.__next__")
        d.launch(i * 1_000 + 400, 5, i * 1_000 + 410, 580, GEMM)
    f = _kinds(d.trace(tmp_path))["step-starvation"]
    assert f.evidence == {"boundaries": 3} and f.time_lost_ns == 3 * 420_000
    busy = KinetoDoc()
    _busy_steps(busy, 4)
    assert "step-starvation" not in _kinds(busy.trace(tmp_path, "busy.json"))


def test_exposed_communication(tmp_path):
    d = KinetoDoc()
    d.launch(0, 5, 10, 300, GEMM)
    d.launch(20, 5, 310, 400, NCCL, stream=20)  # after the GEMM: nothing to hide behind
    d.launch(30, 5, 350, 50, ADD)
    f = _kinds(d.trace(tmp_path))["low-comm-overlap"]
    assert f.evidence == {"communication_ns": 400_000, "exposed_ns": 350_000}


def test_one_stream_serialises_copies_with_compute(tmp_path):
    d = KinetoDoc()
    for i in range(3):
        d.copy(i * 1_000, 5, i * 1_000 + 10, 300)  # the input copy on the compute stream
        d.launch(i * 1_000 + 20, 5, i * 1_000 + 320, 600, GEMM)
    f = _kinds(d.trace(tmp_path))["stream-serialisation"]
    assert f.time_lost_ns == 900_000 and len(f.slices) == 3
    apart = KinetoDoc()
    for i in range(3):
        apart.copy(i * 1_000, 5, i * 1_000 + 10, 300, stream=13)
        apart.launch(i * 1_000 + 20, 5, i * 1_000 + 320, 600, GEMM)
    assert "stream-serialisation" not in _kinds(apart.trace(tmp_path, "apart.json"))


def test_cpu_side_ops_dominating(tmp_path):
    d = KinetoDoc()
    for i in range(3):
        d.cpu(i * 1_000, 700, "metrics.compute")  # CPU work before each launch
        d.launch(i * 1_000 + 700, 5, i * 1_000 + 710, 200, GEMM)
    found = _kinds(d.trace(tmp_path))
    f = found["cpu-bound"]
    assert f.evidence["stretches"] == 2 and "metrics.compute" in f.evidence["top_cpu_ops"]
    # 70% of the device's span idle, mostly for the host: the costliest host finding says so.
    named = [f for f in found.values() if f.evidence.get("idle_main_cause") == "host"]
    assert len(named) == 1 and "mostly waiting for the host to launch work" in named[0].summary


def test_an_idle_device_always_gets_a_finding_naming_the_cause(tmp_path):
    d = KinetoDoc()
    for i in range(4):  # launched in time, yet started late, with nothing in the trace to explain it
        d.launch(i * 5, 5, i * 1_000 + 10, 100, GEMM)
    f = _kinds(d.trace(tmp_path))["gpu-idle"]
    assert f.evidence["main_cause"] == "unexplained" and f.evidence["idle_share"] > 0.8
    assert "does not show" in f.summary


def test_pageable_and_tiny_copies_from_their_names(tmp_path):
    d = KinetoDoc()
    for i in range(20):
        d.copy(i * 100, 20, i * 100 + 30, 10, "HtoD (Pageable -> Device)", nbytes=1_024)
        d.launch(i * 100 + 50, 5, i * 100 + 60, 30, ADD)
    report = analyze(d.trace(tmp_path))
    found = {f.kind: f for f in report.findings}
    assert found["pageable-transfer"].evidence["transfers"] == 20
    assert found["small-transfers"].evidence["transfers"] == 20
    assert report.phases[0].breakdown_ns["transfer"] == 20 * 10_000  # the copies' own device time


@needs_traces
@pytest.mark.parametrize("name", sorted(str(p.relative_to(TRACES)) for p in TRACES.rglob("*.json.gz")))
def test_real_traces_are_classed_and_their_idle_explained(name):
    from accelview.model.analysis.roles import Roles
    from accelview.model.analysis.trace_passes import device_idle

    trace = imported(name)
    r = analyze(trace)
    assert r.ops.unknown_share(trace.slices.dur_ns) < 0.10
    span, idle, by_cause = device_idle(Roles(trace), r.gaps)
    if idle > 0.3 * span:
        main = max(by_cause, key=by_cause.__getitem__)
        naming = [f for f in r.findings if main in (f.evidence.get("idle_main_cause"), f.evidence.get("main_cause"))]
        assert naming and "the device idled" in naming[0].summary
