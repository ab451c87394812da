"""The analysis against the simulator's built-in workloads: each workload's intended problem is
the top finding, op labels and idle causes agree with the simulator's truth, and nothing
changes when the truth is removed from the file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from accelview.capture import sim
from accelview.capture.sim import workloads
from accelview.model.analysis.metrics.evaluate import metric_series, sampled_metrics, window_metric
from accelview.model.analysis.metrics.taxonomy import MetricRegistry
from accelview.model.analysis.report import analyze
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture

SMALL = {
    "gemm": ["iters=4", "m=4096", "n=4096", "k=4096"],
    "pageable-small": ["count=150"],
    "pcie-saturate": ["nbytes=536870912", "chunks=8"],
    "launch-bound": ["count=600"],
    "strided-memory": ["count=30"],
    "sync-heavy": ["count=150"],
}
INTENDED = {
    "pageable-small": {"pageable-transfer", "small-transfers"},
    "pcie-saturate": {"pcie-saturation"},
    "launch-bound": {"launch-bound"},
    "strided-memory": {"low-hbm-efficiency"},
    "sync-heavy": {"host-sync"},
}


def _capture(name, spec="gen5x16-141g", seed=0):
    with sim.session(spec=spec, seed=seed) as s:
        workloads.run(name, SMALL[name])
    return s.trace()


@pytest.fixture(scope="module")
def captures():
    return {name: _capture(name) for name in SMALL}


@pytest.mark.parametrize("name", sorted(INTENDED))
def test_intended_problem_is_the_top_finding(captures, name):
    report = analyze(captures[name])
    assert report.findings, f"{name}: no findings"
    assert report.findings[0].kind in INTENDED[name], [f.kind for f in report.findings]


def test_gemm_ops_are_compute_bound_and_nothing_is_flagged(captures):
    report = analyze(captures["gemm"])
    assert set(report.ops.label) == {"compute"}
    assert report.findings == []


def _truth_agreement(trace, report):
    truth = trace.truth["truth_ops"]
    limiter = {int(s): trace.strings[c] for s, c in zip(truth.slice, truth.limiter, strict=True)}
    ops = np.mean([limiter[int(s)] == str(lab) for s, lab in zip(report.ops.slice, report.ops.label, strict=True)])
    idle = trace.truth["truth_idle"]
    truth_cause = {(int(a), int(z)): trace.strings[c] for a, z, c in zip(idle.start_ns, idle.end_ns, idle.cause,
                                                                           strict=True)}
    agree = total = 0
    for a, z, c in zip(report.gaps.start_ns, report.gaps.end_ns, report.gaps.cause, strict=True):
        total += z - a
        agree += (z - a) * (truth_cause.get((int(a), int(z))) == str(c))
    return ops, (agree / total if total else 1.0)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_labels_and_idle_causes_agree_with_truth(captures, name):
    ops, idle = _truth_agreement(captures[name], analyze(captures[name]))
    assert ops >= 0.95 and idle >= 0.95


def test_analysis_is_identical_without_truth(tmp_path, captures):
    path = tmp_path / "c.h5"
    write_capture(captures["pcie-saturate"], path)
    before = analyze(load_capture(path)).to_json()
    with h5py.File(path, "r+") as f:
        del f["truth"]
    after = load_capture(path)
    assert all(len(t) == 0 for t in after.truth.values())
    got = analyze(after).to_json()
    before.pop("source")
    got.pop("source")
    assert got == before


def test_sampled_pcie_utilisation_shows_the_saturated_upload(captures):
    t = captures["pcie-saturate"]
    reg = MetricRegistry.load()
    assert "pcie_h2d_utilization" in sampled_metrics(t, reg)
    _ts, util = metric_series(t, reg, "pcie_h2d_utilization")
    assert util.max() == pytest.approx(100, abs=2)
    t0, t1 = t.time_bounds()
    assert window_metric(t, reg, "pcie_h2d_utilization", t0, t1) > 90
    assert window_metric(t, reg, "pcie_d2h_utilization", t0, t1) < 10
