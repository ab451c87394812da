"""The distributed analysis against the simulator's truth: each collective's skew and transfer on
every participant, compute vs communication, and the straggler named with its cause even though
the all-reduce barrier makes every replica's step equally long."""

from __future__ import annotations

import json

import numpy as np
import pytest
from accelview.capture.sim import workloads
from accelview.model.analysis.collectives import communication_split, find_collectives
from accelview.model.analysis.distributed import analyze_cluster
from accelview.model.analysis.report import analyze
from accelview.model.cluster import align_cluster


def test_tp_decode_collective_time_splits_into_skew_and_transfer_within_5_percent_of_truth():
    cluster = workloads.run_cluster("tp-decode", ["devices=4", "tokens=3", "prompt=128"])
    (trace,) = cluster.traces()
    collectives = find_collectives([trace])
    truth = trace.truth["truth_collectives"]
    assert len(collectives) * 4 == len(truth)
    split = communication_split(collectives)
    skew = sum(v["skew_ns"] for v in split.values())
    transfer = sum(v["transfer_ns"] for v in split.values())
    true_skew = float(np.sum(truth.last_arrival_ns - truth.arrival_ns))
    true_transfer = float(np.sum(truth.end_ns - truth.last_arrival_ns))
    assert skew == pytest.approx(true_skew, rel=0.05)
    assert transfer == pytest.approx(true_transfer, rel=0.05)
    # and collective by collective, participant by participant
    by_track = {}
    for c in collectives:
        for (_, d), s in zip(c.participants, c.skew_ns.tolist(), strict=True):
            by_track.setdefault(d, []).append(s)
    tops = {int(t): int(trace.tracks.device[t]) for t in np.unique(truth.track)}
    for t, d in tops.items():
        rows = np.flatnonzero(truth.track == t)
        true = (truth.last_arrival_ns - truth.arrival_ns)[rows]
        assert np.allclose(by_track[d], true, atol=100)  # within the device clocks' conversion


def test_a_capture_with_collectives_reports_communication_and_one_without_does_not():
    cluster = workloads.run_cluster("tp-decode", ["devices=2", "tokens=1", "prompt=64"])
    report = analyze(cluster.traces()[0]).to_json()
    comm = report["communication"]
    assert comm["collectives"] == 2 * (2 * 32 + 1)
    assert all(r["communication_ns"] > 0 and r["compute_ns"] > r["communication_ns"] for r in comm["devices"])
    single = workloads.run_cluster("tp-decode", ["devices=1", "tokens=1", "prompt=64"])
    assert "communication" not in analyze(single.traces()[0]).to_json()


@pytest.mark.parametrize(("slow_host", "slow_device", "cause"),
                         [(1, 2, "compute"), (0, -1, "host"), (2, 0, "pcie"), (1, -1, "network")])
def test_the_straggler_is_named_with_its_cause_across_host_captures(slow_host, slow_device, cause):
    cluster = workloads.run_cluster("dp-straggler", {"hosts": 3, "devices": 3, "steps": 3, "slow_host": slow_host,
                                                     "slow_device": slow_device, "cause": cause, "delay_us": 200.0})
    traces, _ = align_cluster(cluster.traces())  # each host in its own raw time: onto host0's clock first
    report = json.loads(json.dumps(analyze_cluster(traces)))
    top = report["findings"][0]
    assert top["kind"] == "straggler"
    assert top["culprit"] == {"host": f"host{slow_host}", "device": None if slow_device < 0 else slow_device}
    assert top["evidence"]["cause"] == cause
    # the barrier equalises the replicas' steps: every device's time between all-reduces is the same
    ends = sorted({round(c.ends.max(), -3) for c in find_collectives(traces)})
    assert len(ends) == 3


def test_no_straggler_when_nobody_is_late():
    cluster = workloads.run_cluster("dp-straggler", {"hosts": 2, "devices": 2, "steps": 2, "delay_us": 0.0})
    report = analyze_cluster(align_cluster(cluster.traces())[0])
    assert [f for f in report["findings"] if f["kind"] == "straggler"] == []
