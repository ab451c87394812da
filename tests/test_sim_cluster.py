"""Many devices and hosts: links and their contention, collectives' timing against the analytic
ring and tree costs, collectives on streams, with events and in graphs, the cluster workloads and
their captures (one per host)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accelview.capture.sim import Simulator, workloads
from accelview.capture.sim.cluster.algorithms import rounds
from accelview.capture.sim.cluster.cluster import Cluster
from accelview.capture.sim.cluster.links import Link, common_start
from accelview.capture.sim.cluster.topology import LinkSpec
from accelview.model import TrackKind
from accelview.model.checks import check_trace

SPEC = LinkSpec()
C2C_BW, C2C_LAT = SPEC.c2c_gb_per_s, SPEC.c2c_latency_ns  # bytes/ns, ns
NET_BW, NET_LAT = SPEC.net_gb_per_s, SPEC.net_latency_ns


def _transfer(truth) -> float:
    return truth.end_ns - truth.last_arrival_ns


def test_a_link_serves_overlapping_transfers_one_after_the_other_and_fills_gaps():
    a = Link("x", "c2c", 0, 0, "tx", 1.0, 0.0)
    b = Link("y", "c2c", 0, 1, "rx", 1.0, 0.0)
    a.book(100.0, 200.0)
    assert a.free_at(50.0, 40.0) == 50.0  # fits before the booking
    assert a.free_at(50.0, 60.0) == 200.0  # would overlap it
    b.book(200.0, 300.0)
    assert common_start([a, b], 150.0, 10.0) == 300.0  # free on both only after both bookings


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("nbytes", [64 << 10, 32 << 20])
def test_collectives_on_one_host_take_the_analytic_ring_and_tree_times(p, nbytes):
    levels = math.ceil(math.log2(p))
    expected = {
        ("all_reduce", "ring"): 2 * (p - 1) * (C2C_LAT + math.ceil(nbytes / p) / C2C_BW),
        ("all_gather", "ring"): (p - 1) * (C2C_LAT + math.ceil(nbytes / p) / C2C_BW),
        ("reduce_scatter", "ring"): (p - 1) * (C2C_LAT + math.ceil(nbytes / p) / C2C_BW),
        ("all_reduce", "tree"): 2 * levels * (C2C_LAT + nbytes / C2C_BW),
        ("all_gather", "tree"): sum(C2C_LAT + (math.ceil(nbytes / p) << i) / C2C_BW for i in range(levels)),
    }
    for (kind, algorithm), want in expected.items():
        s = Simulator(devices=p)
        getattr(s.communicator(), kind)(nbytes, algorithm=algorithm)
        for d in s.devices:
            d.synchronize()
        (truth,) = s.fabric.truth
        assert _transfer(truth) == pytest.approx(want, rel=1e-9), (kind, algorithm)
        ends = [c.end_ns for d in s.devices for c in d.engine.finished if c.rendezvous is not None]
        assert len(ends) == p and max(ends) - min(ends) < 1e-6  # every participant ends together


def test_a_ring_across_hosts_is_bound_by_the_network_and_a_late_participant_makes_the_others_wait():
    c = Cluster(hosts=2, devices=4)
    late = c.device(1, 2)
    late.launch("gemm", m=4096, n=8192, k=8192)  # about 0.6 ms of work before it arrives
    nbytes = 8 << 20
    c.communicator().all_reduce(nbytes)
    c.synchronize()
    (truth,) = c.fabric.truth
    p = 8
    assert _transfer(truth) == pytest.approx(2 * (p - 1) * (NET_LAT + nbytes / p / NET_BW), rel=1e-9)
    assert truth.ranks[int(np.argmax(truth.arrivals))] == (1, 2)
    skew = truth.last_arrival_ns - np.array(truth.arrivals)
    assert skew.max() > 400_000 and skew[truth.ranks.index((1, 2))] == 0


def test_transfers_sharing_a_network_interface_contend_and_others_do_not():
    alone = Cluster(hosts=2, devices=2, links=LinkSpec(nics=1))
    alone.communicator([alone.device(0, 0), alone.device(1, 0)]).send(0, 1, 64 << 20)
    alone.synchronize()
    one = _transfer(alone.fabric.truth[0])
    shared = Cluster(hosts=2, devices=2, links=LinkSpec(nics=1))  # both devices of host 0 send through one NIC
    for d in range(2):
        shared.communicator([shared.device(0, d), shared.device(1, d)]).send(0, 1, 64 << 20)
    shared.synchronize()
    first, second = sorted(shared.fabric.truth, key=lambda t: t.end_ns)
    assert _transfer(first) == pytest.approx(one)
    assert second.end_ns - min(second.arrivals) == pytest.approx(2 * one, rel=0.01)  # waited for the first
    rails = Cluster(hosts=2, devices=2)  # one NIC per device: no contention
    for d in range(2):
        rails.communicator([rails.device(0, d), rails.device(1, d)]).send(0, 1, 64 << 20)
    rails.synchronize()
    assert [_transfer(t) for t in rails.fabric.truth] == pytest.approx([one, one])


def test_collectives_run_on_streams_order_with_events_and_leave_communication_idle_time():
    s = Simulator(devices=2)
    comm = s.communicator()
    side = [d.stream() for d in s.devices]
    for d in s.devices:
        d.launch("gemm", m=512, n=4096, k=4096)
    s.devices[1].launch("gemm", m=4096, n=8192, k=8192)  # device 1 is late
    for d, st in zip(s.devices, side, strict=True):
        st.wait_event(d.default_stream.record_event())
    comm.all_reduce(16 << 20, streams=side)
    events = [st.record_event() for st in side]
    for d, ev in zip(s.devices, events, strict=True):
        d.default_stream.wait_event(ev)
        d.launch("gemm", m=512, n=4096, k=4096, name="after")
    trace = s.trace()
    (truth,) = s.fabric.truth
    after = [c for d in s.devices for c in d.engine.finished if c.name == "after"]
    assert all(c.start_ns >= truth.end_ns for c in after)
    assert check_trace(trace) == []
    idle = trace.truth["truth_idle"]
    causes = {trace.strings[c] for c in idle.cause.tolist()}
    assert "communication" in causes
    rows = trace.truth["truth_collectives"]
    assert len(rows) == 2 and np.all(rows.arrival_ns <= rows.last_arrival_ns) and np.all(
        rows.last_arrival_ns < rows.end_ns)


def test_collectives_inside_a_graph_meet_node_by_node_on_every_participant():
    s = Simulator(devices=4)
    comm = s.communicator()
    with comm.graph("step") as g:
        for d in s.devices:
            d.launch("gemm", m=1, n=4096, k=4096 * (1 + d.index))  # unequal work: later arrivals
        comm.all_reduce(1 << 20)
        for d in s.devices:
            d.launch("gemm", m=1, n=4096, k=4096)
        comm.all_gather(1 << 20, algorithm="tree")
    for _ in range(3):
        g.launch()
    for d in s.devices:
        d.synchronize()
    assert len(s.fabric.truth) == 6
    for t in s.fabric.truth[::2]:
        assert t.ranks[int(np.argmax(t.arrivals))] == (0, 3)  # the most work arrives last
    replays = [[c for c in d.engine.finished if c.kind == "graph"] for d in s.devices]
    for k in range(3):
        runs = [r[k] for r in replays]
        coll_ends = {round(r.start_ns + r.graph.end_off[1], 3) for r in runs}
        assert len(coll_ends) == 1  # the all-reduce node ends at once everywhere
        assert {round(r.end_ns, 3) for r in runs} == {round(s.fabric.truth[2 * k + 1].end_ns, 3)}


def test_tree_and_ring_rounds_move_what_the_collective_needs():
    p, n = 8, 1 << 20
    ring = rounds("all_reduce", "ring", p, n)
    assert ring[0].repeat == 2 * (p - 1) and len(ring[0].edges) == p
    tree = rounds("all_reduce", "tree", p, n)
    assert sum(len(r.edges) for r in tree) == 2 * (p - 1)  # every rank but the root sends once up, once down
    gather = rounds("all_gather", "tree", p, n)
    assert sum(r.nbytes for r in gather) == pytest.approx(n * (p - 1) / p, rel=1e-3)


@pytest.mark.parametrize("cause", ["compute", "host", "pcie", "network"])
@pytest.mark.parametrize("slow_device", [2, -1])
def test_dp_straggler_makes_the_chosen_device_or_host_arrive_last(cause, slow_device):
    c = workloads.run_cluster("dp-straggler", {"hosts": 3, "devices": 4, "steps": 2, "slow_host": 2,
                                               "slow_device": slow_device, "cause": cause, "delay_us": 300.0})
    grads = [t for t in c.fabric.truth if t.name.startswith("gradients")]
    assert len(grads) == 2
    for t in grads:
        arrivals = np.array(t.arrivals)
        late = [r for r, a in zip(t.ranks, arrivals, strict=True) if a - np.median(arrivals) > 150_000]
        want = [(2, slow_device)] if slow_device >= 0 else [(2, d) for d in range(4)]
        assert late == want


def test_tp_decode_and_pp_hosts_run_their_collectives_and_send_recv():
    tp = workloads.run_cluster("tp-decode", ["devices=4", "tokens=2", "prompt=64"])
    kinds = {t.kind for t in tp.fabric.truth}
    assert kinds == {"all_reduce", "all_gather"}
    per_step = 2 * 32 + 1  # two all-reduces a layer and the logits' all-gather
    assert len(tp.fabric.truth) == 3 * per_step  # the prefill and two decode steps
    pp = workloads.run_cluster("pp-hosts", ["hosts=3", "microbatches=2", "prompt=64"])
    sends = [t for t in pp.fabric.truth if t.kind == "send_recv"]
    assert len(sends) == 2 * 2 and {t.ranks for t in sends} == {((0, 0), (1, 0)), ((1, 0), (2, 0))}
    nic = pp.fabric.topology.net[(0, 0, "tx")]
    (carried,) = [x for x in pp.fabric.link_transfers() if x.link is nic]
    assert len(carried.start) == 2 and np.all(carried.nbytes == 64 * 4096 * 2)  # two micro-batches' activations


def test_profile_writes_one_complete_capture_per_host(tmp_path):
    from accelview.app.cli.main import main
    from accelview.model.store.reader import load_capture

    out = tmp_path / "run"
    assert main(["profile", "--workload", "dp-straggler", "--param", "hosts=2", "--param", "devices=2",
                 "--param", "steps=2", "--param", "slow_device=-1", "-o", str(out)]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["host0.h5", "host1.h5"]
    for h, name in enumerate(files):
        trace = load_capture(out / name)
        assert check_trace(trace) == []
        assert trace.metadata["capture"]["host"] == f"host{h}"
        tracks = trace.tracks
        hosts = {trace.strings[x] for x in tracks.host[tracks.kind == int(TrackKind.HOST)].tolist()}
        assert {trace.strings[x] for x in tracks.name[tracks.kind == int(TrackKind.HOST)].tolist()} == {f"host{h}"}
        assert hosts == {f"host{h}"}
        links = np.flatnonzero(tracks.kind == int(TrackKind.NETWORK_LINK))
        names = {trace.strings[x] for x in tracks.name[links].tolist()}
        assert {"C2C TX", "C2C RX", "NIC 1 TX", "NIC 0 RX"} <= names
        # the link counters add up to the bytes their slices moved
        sl = trace.slices
        on_links = np.isin(sl.track, links)
        moved = sum(trace.args(int(a))["bytes"] for a in sl.args[on_links].tolist())
        ct = trace.counter_tracks
        link_counters = [t for t in ct.track.tolist() if trace.strings[tracks.name[t]].startswith(("C2C", "NIC"))]
        counted = trace.counters.value[np.isin(trace.counters.track, link_counters)].sum()
        assert counted == pytest.approx(moved, rel=1e-6)
        assert len(trace.truth["truth_collectives"]) == 2 * 2  # two all-reduces, two participants on each host


def test_cluster_captures_are_the_same_bytes_whatever_the_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = subprocess.run([sys.executable, "-m", "accelview.app.cli", "profile", "--workload", "dp-straggler",
                            "--param", "hosts=2", "--param", "devices=2", "--param", "steps=2", "--param",
                            "cause=network", "-o", str(tmp_path / seed)], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
    for name in ("host0.h5", "host1.h5"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()


@pytest.mark.parametrize(("params", "out", "says"), [
    (["slow_host=9"], "run", "slow_host 9 is not a host of 4"),
    ([], "run.h5", "writes one capture per host: give a directory"),
    (["cause=cosmic"], "run", "cause must be one of"),
])
def test_profile_of_a_cluster_refuses_bad_arguments_in_one_line(tmp_path, capsys, params, out, says):
    from accelview.app.cli.main import main

    args = [a for p in params for a in ("--param", p)]
    assert main(["profile", "--workload", "dp-straggler", *args, "-o", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / out).exists()


@pytest.mark.parametrize("trial", range(12))
def test_random_collectives_on_random_streams_never_deadlock_and_end_together(trial):
    """Collectives over random subsets, on random streams, among random work, events and waits:
    a device whose collective cannot resolve yet goes on with its other streams (the others wait
    on them), every participant ends at once after the last arrival, and each host's capture is
    valid."""
    rng = np.random.default_rng([7, trial])
    c = Cluster(hosts=int(rng.integers(1, 4)), devices=int(rng.integers(2, 5)), seed=trial)
    devs = c.devices()
    streams = {id(d): [d.default_stream, d.stream()] for d in devs}
    comms = [c.communicator([devs[i] for i in sorted(rng.choice(len(devs), int(rng.integers(2, len(devs) + 1)),
                                                                 replace=False))], str(rng.choice(["ring", "tree"])))
             for _ in range(3)]
    for _ in range(5):
        for d in devs:
            if rng.random() < 0.7:
                d.launch("gemm", m=int(rng.integers(1, 512)), n=2048, k=2048,
                         stream=streams[id(d)][int(rng.integers(0, 2))])
        comm = comms[int(rng.integers(0, 3))]
        ss = [streams[id(d)][int(rng.integers(0, 2))] for d in comm.devices]
        kind = str(rng.choice(["all_reduce", "all_gather", "reduce_scatter", "send"]))
        if kind == "send":
            a, b = (int(x) for x in rng.choice(len(comm.devices), 2, replace=False))
            comm.send(a, b, int(rng.integers(1, 1 << 22)), streams=[ss[a], ss[b]])
        else:
            getattr(comm, kind)(int(rng.integers(1, 1 << 24)), streams=ss)
        if rng.random() < 0.3:
            d = devs[int(rng.integers(0, len(devs)))]
            streams[id(d)][0].wait_event(streams[id(d)][1].record_event())
        if rng.random() < 0.2:
            devs[int(rng.integers(0, len(devs)))].synchronize()
    c.synchronize()
    for t in c.fabric.truth:
        assert t.end_ns >= t.last_arrival_ns >= min(t.arrivals)
    ends: dict[int, set[float]] = {}
    for d in devs:
        for cmd in d.engine.finished:
            if cmd.rendezvous is not None:
                ends.setdefault(id(cmd.rendezvous), set()).add(cmd.end_ns)
    assert all(len(e) == 1 for e in ends.values())
    for trace in c.traces():
        assert check_trace(trace) == []


def test_each_host_captures_in_its_own_raw_time_through_its_clock_model():
    class Ahead:
        """A host clock 5 ms ahead of true time."""

        def to_true(self, raw_ns: float) -> float:
            return raw_ns - 5_000_000

        def to_raw(self, true_ns: float) -> float:
            return true_ns + 5_000_000

    from accelview.capture.sim.cluster.timebase import IdentityClock

    c = Cluster(hosts=2, devices=1, clock_models=[IdentityClock(), Ahead()])
    c.device(1, 0).launch("gemm", m=2048, n=8192, k=8192)  # host 1's device arrives last
    c.communicator().all_reduce(8 << 20)
    c.synchronize()
    (truth,) = c.fabric.truth
    assert truth.ranks[int(np.argmax(truth.arrivals))] == (1, 0)
    rows = [t.truth["truth_collectives"] for t in c.traces()]
    # the same true end, read on each host's clock (through its device's clock estimate: ±2 µs)
    assert rows[1].end_ns[0] - rows[0].end_ns[0] == pytest.approx(5_000_000, abs=2_000)
    assert rows[0].last_arrival_ns[0] - rows[0].arrival_ns[0] > 100_000  # host 0 waited for host 1
