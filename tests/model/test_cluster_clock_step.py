"""A cluster capture whose host clock steps (NTP sets it) mid-run: the capture holds what the
stepped clock read, the alignment finds the step where the devices saw it and fits either side,
no event lands before its cause, and the merged capture states the step."""

from __future__ import annotations

import json

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.capture.sim import workloads
from accelview.model.align.rows import maps_of
from accelview.model.analysis.distributed import analyze_cluster
from accelview.model.cluster import align_cluster, load_cluster
from accelview.model.cluster.timebase import PTP_CLOCK
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture
from test_cluster_load import _violations

JUMP_US = 800.0
PARAMS = {"hosts": 3, "devices": 2, "steps": 8, "drift_ppm": 50.0, "jitter_ns": 500.0}


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    """host2's clock steps by 800 µs 40% into the run: its captures, and the step as the truth has it."""
    cluster = workloads.run_cluster("dp-straggler", {**PARAMS, "step_host": 2, "step_us": JUMP_US, "step_at": 0.4},
                                    seed=5)
    out = tmp_path_factory.mktemp("stepped")
    for h, t in enumerate(cluster.traces()):
        write_capture(t, out / f"host{h}.h5")
    return out, cluster.host(2).clock_model.steps[0]


def _ptp_row(trace):
    return [trace.strings[int(n)] for n in trace.tables["clocks"].name].index(PTP_CLOCK)


def test_the_capture_holds_what_the_stepped_clock_read(stepped):
    run, (at, jump) = stepped
    plain = workloads.run_cluster("dp-straggler", PARAMS, seed=5).traces()[2]
    t = load_capture(run / "host2.h5")
    host = np.flatnonzero(t.tracks.clock[t.slices.track] < 0)
    before, after = plain.slices.start_ns[host], t.slices.start_ns[host]
    late = before >= at
    assert late.any() and (~late).any()
    assert np.array_equal(after[~late], before[~late]) and np.array_equal(after[late], before[late] + jump)
    true = maps_of(t.truth["truth_clock_segments"])[_ptp_row(t)]  # the truth states the step
    assert len(true) == 2 and true.segments[1].offset_ns - true.segments[0].offset_ns == pytest.approx(jump)


def test_the_step_is_found_where_it_happened_and_nothing_precedes_its_cause(stepped):
    run, (at, jump) = stepped
    hosts = [load_capture(run / f"host{h}.h5") for h in range(3)]
    aligned, aligns = align_cluster(hosts)
    assert _violations(hosts) > 0 and _violations(aligned) == 0
    top = analyze_cluster(aligned)["findings"][0]  # the stepped host is not taken for the straggler
    assert top["kind"] == "straggler" and top["culprit"] == {"host": "host1", "device": 1}
    m = aligns[2].host_map
    offsets = [s.offset_ns for s in m.segments]
    k = int(np.argmax(np.abs(np.diff(offsets))))
    assert offsets[k + 1] - offsets[k] == pytest.approx(jump, abs=200)  # the jump, from the devices' reads
    found_at = m.segments[k].end_ns - jump / 2  # the pre-step reading it was placed at (the unread gap's middle)
    assert abs(found_at - at) <= 100_000  # within the devices' read period (100 µs)
    true = maps_of(hosts[2].truth["truth_clock_segments"])[_ptp_row(hosts[2])]
    lo, hi = hosts[2].time_bounds()
    for seg in (0, 1):  # every reading away from the step placed within the bound of its segment
        reads = np.linspace(lo, at - 200_000, 50) if seg == 0 else np.linspace(at + jump + 200_000, hi, 50)
        truth = true.to_ref(reads, np.full(len(reads), seg))
        got_seg = m.segment_of(reads)
        err = np.abs(m.to_ref(reads, got_seg) - truth)
        assert (err <= m.error_of(got_seg)).all()


def test_the_merged_capture_states_the_step(stepped):
    run, (_, jump) = stepped
    merged = load_cluster(run)
    names = [merged.strings[int(n)] for n in merged.tables["clocks"].name]
    maps = maps_of(merged.tables["clock_segments"])

    def largest_jump(name: str) -> float:
        return float(np.max(np.abs(np.diff([s.offset_ns for s in maps[names.index(name)].segments])), initial=0.0))

    assert largest_jump("host2 monotonic") == pytest.approx(abs(jump), abs=200)
    assert largest_jump("host1 monotonic") < 10_000  # the other hosts did not step


def test_a_step_of_the_reference_back_or_outside_the_run_is_refused():
    with pytest.raises(ValueError, match="host0"):
        workloads.run_cluster("dp-straggler", {"hosts": 2, "devices": 2, "steps": 1, "step_host": 0})
    with pytest.raises(ValueError, match="step_us"):
        workloads.run_cluster("dp-straggler", {"hosts": 2, "devices": 2, "steps": 1, "step_host": 1, "step_us": -5.0})
    with pytest.raises(ValueError, match="step_at"):
        workloads.run_cluster("dp-straggler", {"hosts": 2, "devices": 2, "steps": 1, "step_host": 1, "step_at": 2.0})


def test_analyze_reports_the_stepped_host(stepped, capsys):
    run, _ = stepped
    assert main(["analyze", str(run), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {h["host"]: h["clock"]["steps"] for h in report["hosts"]} == {"host0": 0, "host1": 0, "host2": 1}
