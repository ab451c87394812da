"""A cluster's host captures, each in its own host's raw time with known clocks, read as one
trace on host0's clock: estimates close to the truth, no effect before its cause, the hosts as
the top-level tracks, raw timestamps recoverable; and the command line around it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from accelview.app.cli.main import demo_capture, main
from accelview.capture.sim import workloads
from accelview.model.align import Segment
from accelview.model.align.rows import maps_of
from accelview.model.analysis.collectives import find_collectives
from accelview.model.cluster import align_cluster, load_cluster
from accelview.model.cluster.timebase import PTP_CLOCK, send_recv_precedences
from accelview.model.schema import TrackKind
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """3 hosts × 2 devices, drift up to 50 ppm, 2 µs PCIe read jitter; inputs over the network."""
    cluster = workloads.run_cluster("dp-straggler", {"hosts": 3, "devices": 2, "steps": 30, "cause": "network",
                                                     "drift_ppm": 50.0, "jitter_ns": 2000.0}, seed=3)
    out = tmp_path_factory.mktemp("run")
    for h, t in enumerate(cluster.traces()):
        write_capture(t, out / f"host{h}.h5")
    return out


def _hosts(run_dir):
    return [load_capture(run_dir / f"host{h}.h5") for h in range(3)]


def _truth(trace, clock):
    t = trace.truth["truth_clocks"]
    r = int(np.flatnonzero(t.clock == clock)[0])
    return Segment(0, 0, float(t.offset_ns[r]), float(t.drift_ppm[r]), 0.0)


def _violations(traces):
    """Effects before causes: flow targets before their sources across clocks, receives before
    their sends (and back), collective ends (slices and truth) before the last arrival."""
    n = 0
    for t in traces:
        f, sl, clock = t.flows, t.slices, t.tracks.clock
        cross = clock[sl.track[f.src]] != clock[sl.track[f.dst]]
        n += int((sl.start_ns[f.dst[cross]] < sl.start_ns[f.src[cross]]).sum())
    n += sum(int((c.ends < c.arrivals.max()).sum()) for c in find_collectives(traces))
    n += sum(int((p.effect_ns < p.cause_ns).sum()) for p in send_recv_precedences(traces, ["host0", "host1", "host2"]))
    rows: dict[int, list[tuple[int, int]]] = {}
    for t in traces:
        tc = t.truth["truth_collectives"]
        for k, a, e in zip(tc.collective.tolist(), tc.arrival_ns.tolist(), tc.end_ns.tolist(), strict=True):
            rows.setdefault(k, []).append((a, e))
    return n + sum(sum(e < max(a for a, _ in p) for _, e in p) for p in rows.values())


def test_clocks_are_estimated_close_to_the_truth_and_no_event_precedes_its_cause(run_dir):
    hosts = _hosts(run_dir)
    assert _violations(hosts) > 0  # each host in its own raw time: the hosts' offsets show
    aligned, aligns = align_cluster(hosts)
    assert _violations(aligned) == 0
    for h, (t, a) in enumerate(zip(hosts, aligns, strict=True)):
        lo, hi = t.time_bounds()
        at = np.linspace(lo, hi, 200)
        for c, m in a.device_maps.items():  # each device against its host
            assert np.abs(m.to_ref(_truth(t, c).from_ref(at)) - at).max() < 500
        if h:  # each host against host0, within the bound it states
            names = [t.strings[int(n)] for n in t.tables["clocks"].name]
            true = _truth(t, names.index(PTP_CLOCK)).to_ref(at)
            err = np.abs(a.host_map.to_ref(at) - true)
            assert err.max() < 2000
            assert (err <= a.host_map.error_of(a.host_map.segment_at_ref(true))).all()


def test_the_merged_trace_has_the_hosts_on_top_and_keeps_raw_timestamps(run_dir):
    hosts = _hosts(run_dir)
    merged = load_cluster(run_dir)
    tr = merged.tracks
    tops = np.flatnonzero(tr.parent < 0)
    assert [merged.track_name(int(t)) for t in tops[np.argsort(tr.sort[tops])]] == ["host0", "host1", "host2"]
    assert (tr.kind[tops] == int(TrackKind.HOST)).all()
    assert merged.self_check() == []
    assert len(merged.slices) == sum(len(t.slices) for t in hosts)
    segments = maps_of(merged.tables["clock_segments"])
    clocks = merged.tables["clocks"]
    # host1's device 0 op slices: raw device ns back through the stored segments
    h1 = hosts[1]
    dev_track = int(np.flatnonzero((h1.tracks.kind == int(TrackKind.EXEC_UNIT)) & (h1.tracks.device == 0))[0])
    c = int(h1.tracks.clock[dev_track])
    raw = h1.tables["clocks"].offset_ns[c] + h1.slices.start_ns[h1.slices.track == dev_track] * (
        1 + h1.tables["clocks"].drift_ppm[c] * 1e-6)
    name = f"host1 {h1.strings[int(h1.tables['clocks'].name[c])]}"
    new_c = [merged.strings[int(n)] for n in clocks.name].index(name)
    merged_track = len(hosts[0].tracks) + dev_track
    back = segments[new_c].from_ref(merged.slices.start_ns[merged.slices.track == merged_track])
    assert np.abs(back - raw).max() <= 2
    # a path of several hosts reads the same; the merged file, written and read, is that trace
    write_capture(merged, run_dir.parent / "cluster.h5", overwrite=True)
    again = load_cluster([run_dir.parent / "cluster.h5"])
    assert np.array_equal(again.slices.start_ns, merged.slices.start_ns)


def test_merge_and_the_commands_take_a_cluster(run_dir, tmp_path, capsys):
    out = tmp_path / "cluster.h5"
    assert main(["merge", *(str(run_dir / f"host{h}.h5") for h in range(3)), "-o", str(out)]) == 0
    assert "3 hosts on host0's clock" in capsys.readouterr().err
    assert main(["info", str(run_dir)]) == 0
    assert "host2" in capsys.readouterr().out
    assert main(["analyze", str(run_dir), "--json"]) == 0
    from_dir = json.loads(capsys.readouterr().out)["findings"][0]
    assert from_dir["culprit"] == {"host": "host1", "device": 1}  # dp-straggler's default slow device
    assert main(["analyze", str(out), "--json"]) == 0  # the merged capture, taken apart host by host
    assert json.loads(capsys.readouterr().out)["findings"][0]["culprit"] == from_dir["culprit"]


def test_bad_cluster_inputs_are_one_line_and_exit_2(run_dir, tmp_path, capsys):
    single = demo_capture()  # a single-host capture, no cluster's
    dup = tmp_path / "again.h5"
    shutil.copy(run_dir / "host1.h5", dup)
    cases = {"missing": [run_dir / "host0.h5", run_dir / "host2.h5"],
             "twice": [*(run_dir / f"host{h}.h5" for h in range(3)), dup],
             "not a host capture": [run_dir / "host0.h5", single]}
    for words, files in cases.items():
        assert main(["merge", *map(str, files), "-o", str(tmp_path / "x.h5")]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err and "Traceback" not in err
