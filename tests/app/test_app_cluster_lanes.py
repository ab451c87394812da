"""A cluster in the timeline: lanes grouped by host then device, link lanes beside PCIe, a
collapsed device's summary lane, the "devices together" arrangement, a selected collective
highlighted on every participant with its skew, clock-error marks, and several host captures
opened as one cluster."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from accelview.app.overlays import RULER_H
from accelview.capture.sim import workloads
from accelview.model.cluster import load_cluster
from accelview.model.schema import TrackKind
from accelview.model.store.writer import write_capture
from accelview.model.view.lanes import COMPACT_MAX_H, COMPACT_MIN_H, HEADER, SUMMARY, LaneLayout
from accelview.model.view.lod import TraceLOD
from PySide6.QtCore import QPointF
from timeline_widgets import pixels, shown_timeline, shown_window

HOSTS, DEVICES = 2, 4


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A 2-host × 4-device data-parallel run, one capture per host."""
    cluster = workloads.run_cluster("dp-straggler", {"hosts": HOSTS, "devices": DEVICES, "steps": 4}, seed=1)
    out = tmp_path_factory.mktemp("run")
    for h, t in enumerate(cluster.traces()):
        write_capture(t, out / f"host{h}.h5")
    return out


@pytest.fixture(scope="module")
def cluster(run_dir):
    return load_cluster(run_dir)


def _layout(trace, **kw):
    return LaneLayout(trace, TraceLOD(trace, origin=int(trace.time_bounds()[0])), **kw)


def _kind(trace, t):
    return TrackKind(int(trace.tracks.kind[t]))


def test_lanes_grouped_by_host_then_device(cluster):
    lay = _layout(cluster)
    heads = [ln.track for ln in lay.lanes if ln.depth == HEADER]
    hosts = [t for t in heads if _kind(cluster, t) == TrackKind.HOST]
    assert [cluster.track_name(t) for t in hosts] == [f"host{h}" for h in range(HOSTS)]
    at = {t: i for i, t in enumerate(heads)}
    for i, host in enumerate(hosts):  # each host's devices come after it and before the next host
        devs = [t for t in heads if _kind(cluster, t) == TrackKind.DEVICE and int(cluster.tracks.parent[t]) == host]
        assert len(devs) == DEVICES
        nxt = at[hosts[i + 1]] if i + 1 < len(hosts) else len(heads)
        assert all(at[host] < at[d] < nxt for d in devs)


def test_link_lanes_sit_beside_pcie(cluster):
    lay = _layout(cluster)
    rows = [ln.track for ln in lay.lanes if ln.depth == 0]
    kinds = [_kind(cluster, t) for t in rows]
    for i, k in enumerate(kinds):
        if k == TrackKind.NETWORK_LINK and cluster.tracks.device[rows[i]] >= 0:  # a chip-to-chip link
            assert kinds[i - 1] in (TrackKind.PCIE, TrackKind.NETWORK_LINK)
    assert any(k == TrackKind.NETWORK_LINK for k in kinds)
    nic = [i for i, t in enumerate(rows)
           if _kind(cluster, t) == TrackKind.NETWORK_LINK and cluster.tracks.device[t] < 0]
    first_unit = min(i for i, k in enumerate(kinds) if k == TrackKind.EXEC_UNIT)
    assert nic and min(nic) < first_unit  # a host's network lanes before its devices


def test_collapsed_device_shows_a_busy_summary_lane(qtbot, cluster):
    st, w = shown_timeline(qtbot, 1000, 500)
    st.set_trace(cluster)
    dev = next(t for t in range(len(cluster.tracks)) if _kind(cluster, t) == TrackKind.DEVICE)
    st.set_collapsed(dev, True)
    lane = st.layout.lane_of(dev, SUMMARY)
    assert lane is not None and st.layout.summary[dev]
    assert st.layout.lane_of(dev + 1, 0) is None  # its units fold into it
    w.vbar.setValue(max(lane.y - 40, 0))
    img = pixels(w.grab().toImage())
    y = int(w.painter.lane_y(lane, w.vbar.value()) + lane.h / 2)
    row = img[y, 240:990]
    assert len(np.unique(row)) > 1 and (row != img[y, 995]).mean() > 0.3  # slices drawn, not an empty row


def _compact(lay):
    return [ln for ln in lay.lanes if ln.depth == SUMMARY and ln.track in lay.compact_names]


def test_devices_together_one_compact_row_per_device_fit_to_height(cluster):
    lay = _layout(cluster, together=True, fit_h=2000)  # room for the hosts' threads
    rows = _compact(lay)
    assert len(rows) == HOSTS * DEVICES == len(lay.compact)
    assert all(_kind(cluster, ln.track) == TrackKind.DEVICE for ln in rows)
    assert [ln.y for ln in rows] == [rows[0].y + i * rows[0].h for i in range(len(rows))]  # adjacent
    units = {t for r in rows for t in lay.summary[r.track]}
    assert units and all(_kind(cluster, t) == TrackKind.EXEC_UNIT for t in units)
    assert not any(ln.track in units for ln in lay.lanes if ln.depth >= 0)  # units only in their device's row
    hosts_end = rows[0].y
    assert all(ln.y < hosts_end for ln in lay.lanes if ln not in rows)  # host threads above
    assert {cluster.track_name(ln.track) for ln in lay.lanes if ln.depth == HEADER} >= {"host0", "host1"}
    assert "host1" in lay.compact_names[rows[-1].track]
    assert rows[0].h == COMPACT_MAX_H  # room enough: rows as tall as they may be


def test_many_hosts_together_fold_each_host_to_one_row_above_the_devices(cluster):
    lay = _layout(cluster, together=True, fit_h=300)  # the hosts' threads would fill the screen
    rows = _compact(lay)
    assert len(rows) == len(lay.lanes) == HOSTS + HOSTS * DEVICES
    assert [_kind(cluster, ln.track) for ln in rows[:HOSTS]] == [TrackKind.HOST] * HOSTS
    h = rows[0].h
    assert all(ln.h == h for ln in rows) and h == max(COMPACT_MIN_H, min(COMPACT_MAX_H, 300 // len(rows)))
    assert lay.height <= 300 + 3  # everything on one screen
    tiny = _compact(_layout(cluster, together=True, fit_h=30))
    assert len(tiny) == len(rows) and {ln.h for ln in tiny} == {COMPACT_MIN_H}  # thinner, never fewer
    host_busy = lay.summary[rows[0].track]
    assert host_busy and not any(_kind(cluster, t) == TrackKind.EXEC_UNIT for t in host_busy)


def test_devices_together_from_the_view_menu(qtbot, tmp_path, cluster):
    win = shown_window(qtbot, tmp_path)
    win.set_trace(cluster, "cluster")
    assert not win.state.layout.compact
    win.together_action.trigger()
    assert len(win.state.layout.compact) == HOSTS * DEVICES
    listed = win.show_keys().keys()
    assert "G" in listed and "Ctrl+K" in listed
    win.together_action.trigger()
    assert not win.state.layout.compact


def _collective_slice(trace):
    lane = next(t for t in range(len(trace.tracks)) if trace.track_name(t) == "collective")
    return int(np.flatnonzero(trace.slices.track == lane)[0])


@pytest.mark.parametrize("together", [False, True])
def test_selected_collective_on_every_participant_with_its_skew(qtbot, cluster, together):
    st, w = shown_timeline(qtbot, 1200, 900)
    st.set_trace(cluster)
    st.set_together(together)
    st.collapsed.clear()
    st.relayout()
    sid = _collective_slice(cluster)
    st.select(sid)
    marks = st.collective
    assert marks is not None and len(marks.slices) == HOSTS * DEVICES and sid in marks.slices.tolist()
    sl = cluster.slices
    assert len(set(sl.track[marks.slices].tolist())) == HOSTS * DEVICES  # one per participant lane
    assert len({cluster.strings[int(n)] for n in sl.name[marks.slices]}) == 1
    st.show_window(int(sl.start_ns[marks.slices].min()), int((sl.start_ns + sl.dur_ns)[marks.slices].max()))
    boxes = w.painter.collective_boxes(w.vbar.value())
    if together:
        assert len(boxes) == HOSTS * DEVICES  # every participant on screen
    assert boxes
    last_x = w.painter.collective_boxes(0)[0][1].right()
    expect_last = 220 + st.scale.x_of(marks.last_arrival_ns - st.origin)
    assert last_x == pytest.approx(expect_last)
    by_rect = {}
    for sid_, arrival in zip(marks.slices.tolist(), marks.arrivals.tolist(), strict=True):
        r = w.painter.slice_rect(sid_, w.vbar.value())
        if r is not None:
            by_rect[(r.top(), r.left())] = arrival
    for r, skew in boxes:
        arrival = by_rect[(r.top(), r.left())]
        assert skew.left() == pytest.approx(220 + st.scale.x_of(arrival - st.origin))
        assert skew.right() == pytest.approx(expect_last)
        assert skew.top() == r.top() and skew.height() == r.height()  # on the participant's own row
    sel = w.painter.slice_rect(sid, w.vbar.value())
    label = w.painter.collective_label_box("all_reduce × 8 · max skew 336 µs", boxes, last_x, w.vbar.value())
    assert label.left() > last_x  # beside the last-arrival line, in the selected participant's own row:
    assert label.center().y() == pytest.approx(sel.center().y(), abs=1.5)  # not over another lane's data
    st.select(int(marks.slices[-1]))  # another participant, its row cut off (a widget ending above it):
    low = w.painter.slice_rect(int(marks.slices[-1]), w.vbar.value())  # the top participant in view has the label
    above = [r for r, _ in w.painter.collective_boxes(w.vbar.value()) if r.top() >= RULER_H and r.bottom() <= low.top()]
    assert above
    label = w.painter.collective_label_box("x", w.painter.collective_boxes(w.vbar.value()), last_x, w.vbar.value(),
                                           view_h=low.top())
    assert label.center().y() == pytest.approx(min(r.center().y() for r in above), abs=1.5)
    st.select(sid)
    if together:  # a click on a device's compact row picks its unit's slice there
        r = boxes[-1][0]
        picked = w.slice_at(QPointF(r.left() + r.width() / 2, r.center().y()))
        assert picked in marks.slices.tolist()
    widths = [skew.width() for _, skew in boxes]
    assert min(widths) == pytest.approx(0.0, abs=1e-6) or len(boxes) < HOSTS * DEVICES
    assert max(widths) > 1  # the late one kept the others waiting
    st.select(int(np.flatnonzero(cluster.slices.track != sl.track[sid])[0]))
    assert st.collective is None or sid not in st.collective.slices.tolist()


def test_clock_error_marks_on_aligned_hosts_and_devices(qtbot, cluster):
    st, w = shown_timeline(qtbot, 1200, 900)
    st.set_trace(cluster)
    lanes = st.layout.visible(0, st.layout.height)
    assert not w.painter.clock_marks(lanes, 0)  # only on request
    st.set_show_clock_error(True)
    marks = w.painter.clock_marks(lanes, 0)
    named = {tip.split(":")[0] for _, _, tip in marks}
    assert "host1" in named and "host0" not in named  # host0's clock is the reference
    segs = cluster.tables["clock_segments"]
    assert all("±" in label for _, label, _ in marks) and len(segs)
    top = max(float(segs.error_ns.max()), 1.0)
    assert all("aligned to the reference within ±" in tip for _, _, tip in marks) and top > 0


def test_several_host_captures_open_as_one_cluster(qtbot, tmp_path, run_dir):
    win = shown_window(qtbot, tmp_path)
    files = sorted(str(p) for p in run_dir.glob("*.h5"))
    with qtbot.waitSignal(win.state.trace_changed, timeout=20000):
        win.open_paths(files)
    tr = win.state.trace
    tops = [tr.track_name(t) for t in np.flatnonzero(tr.tracks.parent < 0)]
    assert tops == [f"host{h}" for h in range(HOSTS)]
    assert win.recent_files()[0] == str(run_dir.resolve())  # all of a folder's captures: the folder
    with qtbot.waitSignal(win.state.trace_changed, timeout=20000):
        win.open_paths([str(run_dir)])  # a folder of host captures, as dropped
    assert "merged" in win.state.trace.metadata


def test_files_that_are_not_one_cluster_say_so(qtbot, tmp_path, run_dir):
    win = shown_window(qtbot, tmp_path)
    shutil.copy(run_dir / "host0.h5", tmp_path / "again.h5")
    job = win.open_paths([str(run_dir / "host0.h5"), str(tmp_path / "again.h5")])
    with qtbot.waitSignal(job.finished, timeout=20000):
        pass
    qtbot.waitUntil(lambda: win.error_box is not None and win.error_box.isVisible(), timeout=5000)
    text = win.error_box.text()
    assert "host0 twice" in text and "\n" not in text and "Traceback" not in text
    assert win.state.trace is None
    win.error_box.close()


def test_link_counters_listed_beside_their_devices_pcie_counters(cluster):
    from accelview.model.view.counter_order import counter_label, counter_order

    ct = cluster.counter_tracks
    order = counter_order(cluster)
    assert sorted(order) == list(range(len(ct)))  # every counter once
    block = [cluster.strings[int(ct.block[i])] for i in order]
    dev = [int(cluster.tracks.device[int(ct.track[i])]) for i in order]
    links = [k for k, b in enumerate(block) if b == "c2c"]
    assert links
    for k in links:  # right after a PCIe counter of the same device, or another link counter of it
        assert block[k - 1] in ("pcie", "c2c") and dev[k - 1] == dev[k]
        assert f"device {dev[k]}" in counter_label(cluster, order[k])
    nets = [k for k, b in enumerate(block) if b == "network"]
    assert nets and all(block[k - 1] in ("pcie", "c2c", "network") for k in nets)


def test_collectives_of_one_host_capture_match_across_its_devices():
    from accelview.model.view.collective_marks import CollectiveIndex

    params = {"hosts": 1, "devices": DEVICES, "steps": 2, "slow_host": 0}
    (trace,) = workloads.run_cluster("dp-straggler", params, seed=2).traces()
    idx = CollectiveIndex(trace)  # no splitter needed: one host
    found = idx.all()
    assert found and all(len(m.slices) == DEVICES for m in found)
    sl = trace.slices
    for m in found:
        assert len(set(trace.tracks.device[sl.track[m.slices]].tolist())) == DEVICES
        assert np.all(m.skew_ns >= 0) and m.skew_ns.min() == 0
        assert all(idx.of(int(s)) is m for s in m.slices)
    assert idx.of(int(np.flatnonzero(~np.isin(np.arange(len(sl)), np.concatenate([m.slices for m in found])))[0])) \
        is None
