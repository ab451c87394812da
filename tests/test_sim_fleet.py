"""A simulated fleet written one capture per host with faults planted: the files, the truth
beside them, and the plants as the simulation's own truth shows them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from accelview.capture.sim.cluster.fleet import TRUTH_FILE, FleetPlan, write_fleet
from accelview.model.align.rows import maps_of
from accelview.model.cluster import align_cluster
from accelview.model.fleet.analyze import analyze_fleet
from accelview.model.store.reader import load_capture

HOSTS, DEVICES = 3, 3


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet")
    truth = write_fleet(FleetPlan.random(HOSTS, DEVICES, seed=1, steps=4), out)
    return out, truth


def _arrivals(out):
    """Per all-reduce over the whole fleet, each (host, device)'s true arrival on host0's clock,
    from the captures' truth (each device's arrival and the collective's last arrival)."""
    lateness: dict[int, dict[tuple[int, int], float]] = {}
    for h in range(HOSTS):
        t = load_capture(out / f"host{h}.h5")
        tc = t.truth["truth_collectives"]
        for k, dev, a, last in zip(tc.collective.tolist(), t.tracks.device[tc.track].tolist(), tc.arrival_ns.tolist(),
                                   tc.last_arrival_ns.tolist(), strict=True):
            lateness.setdefault(k, {})[(h, dev)] = a - last  # ≤ 0: how long before the last arrival
    return [v for v in lateness.values() if len(v) == HOSTS * DEVICES]


def test_the_fleet_is_one_capture_per_host_and_its_truth(fleet):
    out, truth = fleet
    assert sorted(p.name for p in out.iterdir()) == sorted([*(f"host{h}.h5" for h in range(HOSTS)), TRUTH_FILE])
    assert json.loads((out / TRUTH_FILE).read_text()) == truth
    assert [p["kind"] for p in truth["planted"]] == ["slow-device", "slow-host", "slow-network-link",
                                                     "slow-c2c-link", "clock-step"]
    for p in truth["planted"]:
        assert p["host"] in {f"host{h}" for h in range(1, HOSTS)}
        assert p["device"] is None or 0 <= p["device"] < DEVICES
        if p["kind"].endswith("-link"):  # the link's sending end is late too, and named
            assert p["peer"]["host"] in truth["late_hosts"]
    assert {p["host"] for p in truth["stragglers"]} <= set(truth["late_hosts"])
    for h in range(HOSTS):
        t = load_capture(out / f"host{h}.h5")
        assert t.metadata["capture"]["host"] == f"host{h}" and t.metadata["capture"]["devices"] == DEVICES


def test_each_planted_straggler_arrives_late_by_its_delay(fleet):
    out, truth = fleet
    rounds = _arrivals(out)
    assert len(rounds) == 4
    for p in truth["stragglers"]:
        h = int(p["host"].removeprefix("host"))
        who = [(h, p["device"])] if p["device"] is not None else [(h, d) for d in range(DEVICES)]
        for r in rounds:
            on_time = max(r[(0, d)] for d in range(DEVICES))  # host0 is never planted
            assert all(r[w] - on_time >= 0.5 * p["delay_us"] * 1e3 for w in who), p


def test_the_stepped_host_reads_the_jump_from_halfway(fleet):
    out, truth = fleet
    (step,) = truth["clock_steps"]
    t = load_capture(out / f"{step['host']}.h5")
    lo, hi = t.time_bounds()
    assert lo < step["at_raw_ns"] < hi
    ptp = [t.strings[int(n)] for n in t.tables["clocks"].name].index("ptp host0")
    segs = maps_of(t.truth["truth_clock_segments"])[ptp].segments
    assert len(segs) == 2 and segs[1].offset_ns - segs[0].offset_ns == pytest.approx(step["jump_us"] * 1e3)
    others = [load_capture(out / f"host{h}.h5") for h in range(1, HOSTS) if f"host{h}" != step["host"]]
    assert all(not len(o.truth["truth_clock_segments"]) for o in others)


def test_an_existing_fleet_is_not_overwritten_and_a_one_host_fleet_refused(fleet):
    out, _ = fleet
    with pytest.raises(ValueError, match="already exists"):
        write_fleet(FleetPlan.random(HOSTS, DEVICES, seed=4, steps=1), out)
    with pytest.raises(ValueError, match="at least 2 hosts"):
        FleetPlan.random(1, 8)
    big = FleetPlan.random(64, 8, seed=1)  # enough hosts: each plant on a host of its own
    assert len({p.host for p in big.plants}) == len(big.plants) and 0 not in {p.host for p in big.plants}


def test_the_stepped_host_and_its_devices_are_aligned_as_the_truth_has_them(fleet):
    out, truth = fleet
    (step,) = truth["clock_steps"]
    hosts = [load_capture(out / f"host{h}.h5") for h in range(HOSTS)]
    _, aligns = align_cluster(hosts)
    h = int(step["host"].removeprefix("host"))
    t, a = hosts[h], aligns[h]
    true = maps_of(t.truth["truth_clock_segments"])
    lo, hi = t.time_bounds()
    at = np.linspace(lo, hi, 400)
    jump = step["jump_us"] * 1e3  # readings away from the step's moment (and none fall in the gap it left)
    at = at[(at < step["at_raw_ns"] - 200_000) | (at > step["at_raw_ns"] + jump + 200_000)]
    for c, m in a.device_maps.items():  # each device against its stepped host, through the step
        seg = true[c].segment_at_ref(at)
        assert np.abs(m.to_ref(true[c].from_ref(at, seg)) - at).max() < 1000
    assert len(a.host_map) >= 2


def test_the_fleet_analysis_finds_the_step_and_ranks_the_planted_hosts_latest(fleet):
    out, truth = fleet
    report = analyze_fleet(out, cache=False)
    stepped = {s["host"] for s in truth["clock_steps"]}
    assert {h["host"] for h in report["hosts"] if h["clock"]["steps"]} == stepped
    late = set(truth["late_hosts"])
    assert {h["host"] for h in report["hosts"][:len(late)]} == late


def test_the_stepped_hosts_utilisation_is_not_folded_by_its_step(fleet):
    """Each host's strip holds its devices' compute time: the stepped host's as much as the
    others' (its profile sampled on host0's clock, not folded around the jump)."""
    out, truth = fleet
    report = analyze_fleet([str(out / f"host{h}.h5") for h in range(HOSTS)])
    t0, t1 = report["span_ns"]
    stepped = truth["clock_steps"][0]["host"]
    shown = {}
    for h in report["hosts"]:
        u = np.asarray(h["utilisation"])
        shown[h["host"]] = float(u.sum()) * (t1 - t0) / len(u) * h["devices"]
        assert shown[h["host"]] == pytest.approx(h["compute_ns"], rel=0.02)
    assert shown[stepped] > 0


@pytest.mark.parametrize("seed", [2, 5])
def test_every_planted_straggler_is_named_latest_first(tmp_path, seed):
    """A fleet with several stragglers (a minority of its hosts, as the median arrival needs)
    gets a straggler finding for each planted one, latest first, each culprit where the truth
    planted it (a slow link's late sender named too), and none for the hosts on time."""
    truth = write_fleet(FleetPlan.random(10, 2, seed=seed, steps=4), tmp_path)
    report = analyze_fleet([str(tmp_path / f"host{h}.h5") for h in range(10)])
    named = [f["evidence"] for f in report["findings"] if f["kind"] == "straggler"]
    culprits = [(e["culprit"]["host"], e["culprit"]["device"]) for e in named]
    for p in truth["stragglers"]:
        assert any(h == p["host"] and d in (None, p["device"]) for h, d in culprits), (p, culprits)
    assert {h for h, _ in culprits} <= set(truth["late_hosts"])
    lateness = [e["mean_late_ns"] for e in named]
    assert lateness == sorted(lateness, reverse=True)


def test_no_busy_counter_reads_over_100_percent(fleet):
    """The collective engine's sends overlap its reductions: its time is not the vector unit's,
    so no unit's busy counter passes 100% (it read 150% when it was counted there)."""
    out, _ = fleet
    for h in range(HOSTS):
        t = load_capture(out / f"host{h}.h5")
        ct, c = t.tables["counter_tracks"], t.tables["counters"]
        busy = [int(tr) for tr in ct.track if t.track_name(int(tr)).endswith(" busy")]
        assert busy
        for tr in busy:
            assert c.value[c.track == tr].max(initial=0.0) <= 100.0 + 1e-6, t.track_name(tr)
