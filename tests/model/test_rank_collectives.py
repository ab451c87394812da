"""Collectives across the ranks of a multi-rank GPU trace: ranks on one clock by what their NCCL
kernels prove, each collective's skew and transfer per rank, the straggler named with its cause
only beyond the clocks' error, on generated ranks with known clocks and on the real traces."""

from __future__ import annotations

import json

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.model import TraceBuilder, TrackKind
from accelview.model.analysis.rank_collectives import rank_collectives, rank_summary, straggler
from accelview.model.analysis.report import analyze
from accelview.model.text.ranks import format_ranks
from kineto_traces import TRACES, imported, needs_traces

US = 1_000
OFFSETS = (0, 2_100 * US, -1_300 * US)  # each rank's clock minus rank 0's


def _ranks(late_by: int, cause: str, jitter: int = 3 * US, n: int = 30, seed: int = 1,
           kernel: str = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"):
    """Three ranks doing ``n`` steps of compute then an all-reduce; rank 2 arrives ``late_by`` late,
    having computed that much longer (``compute``) or launched its kernel that much later (``host``).
    Returns the trace and each collective's true arrivals (rank 0's clock)."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    streams, compute = [], []
    for rank in range(3):
        top = b.add_track(f"rank {rank}", TrackKind.PROCESS)
        gpu = b.add_track(f"GPU {rank}", TrackKind.DEVICE, top, device=rank)
        compute.append(b.add_track("stream 7", TrackKind.GPU_STREAM, gpu, device=rank))
        streams.append(b.add_track("stream 84", TrackKind.GPU_STREAM, gpu, device=rank))
    t, truth = 1_000 * US, []
    for _ in range(n):
        work = 800 * US + rng.uniform(0, 50 * US, 3)
        arrive = t + work
        if cause == "compute":
            work[2] += late_by
        arrive[2] += late_by
        end = arrive.max() + 200 * US + rng.uniform(0, jitter, 3)
        for r in range(3):
            b.add_slice(compute[r], int(t + OFFSETS[r]), int(work[r]), "volta_sgemm_128x64_nn")
            b.add_slice(streams[r], int(arrive[r] + OFFSETS[r]), int(end[r] - arrive[r]), kernel)
        truth.append(arrive)
        t = end.max() + 100 * US
    return b.build(), np.array(truth)


@pytest.mark.parametrize("cause", ["compute", "host"])
def test_the_late_rank_is_named_with_its_cause_and_every_skew_is_right(cause: str) -> None:
    trace, truth = _ranks(400 * US, cause)
    alignment, colls = rank_collectives(trace)
    assert [(a.rank, a.reference) for a in alignment] == [(1, 0), (2, 0)]
    for a in alignment:
        assert a.low_ns <= OFFSETS[a.rank] <= a.high_ns and abs(a.offset_ns - OFFSETS[a.rank]) <= a.likely_ns
    assert len(colls) == len(truth) and all(c.ranks == (0, 1, 2) for c in colls)
    true_skew = truth.max(axis=1, keepdims=True) - truth
    got_skew = np.array([c.skew_ns for c in colls])
    assert np.abs(got_skew - true_skew).max() <= 2 * max(a.likely_ns for a in alignment) + 1
    f = straggler(trace, alignment, colls, span_ns=1e9)
    assert f is not None and f.kind == "straggler"
    assert f.to_json()["culprit"] == {"host": "rank 2", "device": 2, "rank": 2}
    assert f.evidence["cause"] == cause and f.evidence["late_collectives"] == len(truth)


def test_lateness_within_the_clocks_error_names_no_straggler() -> None:
    trace, _ = _ranks(20 * US, "host", jitter=60 * US)  # ends agree only to 60 µs: 20 µs late is noise
    alignment, colls = rank_collectives(trace)
    assert min(a.likely_ns for a in alignment) > 20 * US
    assert straggler(trace, alignment, colls, span_ns=1e9) is None


@pytest.mark.parametrize("kernel", ["ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                                    "ncclAllReduceRingLLKernel_sum_f32(ncclColl)"])
def test_older_nccl_kernel_names_are_matched_too(kernel: str) -> None:
    trace, truth = _ranks(400 * US, "compute", kernel=kernel)
    report = analyze(trace)
    comm = report.communication
    assert comm is not None and comm["collectives"] == len(truth)
    assert [r["collectives"] for r in comm["ranks"]] == [len(truth)] * 3
    assert comm["ranks"][0]["skew_ns"] > comm["ranks"][2]["skew_ns"]  # rank 0 waits for rank 2
    assert any(f.kind == "straggler" for f in report.findings)


@needs_traces
def test_the_sampled_ranks_of_a_128_rank_run_report_their_skew_and_its_bound() -> None:
    trace = imported("a100_128rank_sampled")
    alignment, colls = rank_collectives(trace)
    s = rank_summary(trace, alignment, colls)
    (a,) = s["alignment"]
    assert a["proven_low_ns"] <= a["offset_ns"] <= a["proven_high_ns"]
    assert a["likely_uncertainty_ns"] < a["proven_uncertainty_ns"]  # the ends agree far closer than they prove
    assert s["collectives"] == len(s["matched"]) >= 2 and s["unaligned_ranks"] == []
    for c in s["matched"]:
        assert c["ranks"] == [0, 1] and min(c["skew_ns"]) == 0  # the last to arrive waits for nobody
        assert c["proven_uncertainty_ns"] == a["proven_uncertainty_ns"]
    assert [r["rank"] for r in s["ranks"]] == [0, 1]
    assert all(r["compute_ns"] > 0 and r["communication_ns"] > 0 for r in s["ranks"])
    f = straggler(trace, alignment, colls, span_ns=1e9)
    # Nothing is late beyond the ±42 ms the long all-gathers prove.
    assert f is None or f.evidence["proven_late_collectives"] == 0


@needs_traces
def test_two_ranks_of_different_jobs_are_not_aligned(capsys) -> None:
    files = [str(TRACES / "a100_2rank_nccl_rank0.json.gz"), str(TRACES / "v100_2rank_nccl_rank1_large.json.gz")]
    assert main(["analyze", *files, "--json"]) == 0
    comm = json.loads(capsys.readouterr().out)["communication"]
    assert comm["alignment"] == [] and comm["unaligned_ranks"] == [1] and comm["matched"] == []
    assert comm["reference"] == 0 and all(r["nccl_kernels"] > 0 for r in comm["ranks"])
    assert comm["world_sizes"] == [2]  # both say 2: only their kernels tell the jobs apart


@needs_traces
def test_ranks_of_jobs_of_different_sizes_are_told_apart(capsys) -> None:
    files = [str(TRACES / "diff" / "control_a100_rank3.json.gz"), str(TRACES / "diff" / "test_v100_rank1.json.gz")]
    assert main(["analyze", *files]) == 0
    out = capsys.readouterr().out
    assert "different world sizes (2, 8): not the ranks of one job" in out
    assert "rank 3: no NCCL kernel sequence consistent with rank 1's" in out


@needs_traces
def test_analyze_takes_a_runs_rank_files(capsys) -> None:
    ranks = [str(TRACES / "a100_128rank_sampled" / f"rank-{r}.json.gz") for r in (0, 1)]
    assert main(["analyze", *ranks]) == 0
    out = capsys.readouterr().out
    assert "Collectives across ranks" in out and "rank 1: clock" in out and "proven within" in out
    assert main(["analyze", ranks[0], ranks[0]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rank 0 twice" in err[0]


def test_a_rank_without_nccl_kernels_is_named_unaligned_and_says_why() -> None:
    b = TraceBuilder()
    for rank in (0, 1, 2):
        top = b.add_track(f"rank {rank}", TrackKind.PROCESS)
        stream = b.add_track("stream 7", TrackKind.GPU_STREAM, b.add_track(f"GPU {rank}", TrackKind.DEVICE, top,
                                                                           device=rank), device=rank)
        b.add_slice(stream, 1000, 5000, "volta_sgemm_128x64_nn")
        if rank:  # rank 0 runs no collective: rank 1 is the reference
            b.add_slice(stream, 10_000, 5000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    trace = b.build()
    alignment, colls = rank_collectives(trace)
    s = rank_summary(trace, alignment, colls)
    assert s["reference"] == 1 and s["unaligned_ranks"] == [0]
    assert [r["nccl_kernels"] for r in s["ranks"]] == [0, 1, 1]
    assert "rank 0: no NCCL kernels" in "\n".join(format_ranks(s, 0, 5))
