"""The statistics table: groups by name, lane and phase, percentiles as numpy computes them,
rates from counters and shapes, windows, and the text and CSV that print it."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.model import TraceBuilder, TrackKind
from accelview.model.analysis import stats
from accelview.model.analysis.stats import group_percentiles, op_stats
from accelview.model.analysis.stats_table import NO_PHASE, StatsSource
from accelview.model.store.writer import write_capture
from accelview.model.text.stats import format_stats, stats_csv


def _trace():
    """Two phases on a host thread launching ops on two units (launch in the phase, op after
    it), a copy on a DMA lane, durations chosen so the percentiles differ."""
    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    th = b.add_track("main thread", TrackKind.HOST_THREAD, parent=host, host="h")
    api = b.add_track("runtime API", TrackKind.RUNTIME_API, parent=th, host="h")
    dev = b.add_track("device 0", TrackKind.DEVICE, device=0)
    mx = b.add_track("matrix", TrackKind.EXEC_UNIT, parent=dev, device=0)
    vec = b.add_track("vector", TrackKind.EXEC_UNIT, parent=dev, device=0)
    dma = b.add_track("DMA 0", TrackKind.DMA_ENGINE, parent=dev, device=0)
    b.add_slice(th, 0, 50_000, "prefill", "user")
    b.add_slice(th, 50_000, 50_000, "decode", "user")
    t = 0
    for i, d in enumerate((1_000, 2_000, 3_000, 10_000, 4_000)):  # gemm on the matrix unit
        call = b.add_slice(api, t + 100 + i, 50, "launch", "runtime")
        op = b.add_slice(mx, 40_000 + t, d, "gemm", "kernel", args={"flops": d * 1e6, "bytes_read": d * 10})
        b.add_flow(call, op, "launch")
        t += 20_000  # launches of the last two ops fall in "decode"; all ops run after 40 µs
    b.add_slice(vec, 90_000, 500, "softmax", "kernel")
    b.add_slice(dma, 1_000, 8_000, "H2D", "dma", args={"bytes": 8_000_000})
    return b.build(source="stats")


def test_by_name_counts_totals_and_percentiles_as_numpy():
    tab = StatsSource(_trace()).table("name")
    assert tab.keys == ["gemm", "H2D", "softmax"]  # largest total first
    durs = np.array([1_000, 2_000, 3_000, 10_000, 4_000])
    assert tab.count.tolist() == [5, 1, 1] and tab.total_ns.tolist() == [20_000, 8_000, 500]
    assert tab.mean_ns[0] == 4_000
    for col, q in ((tab.p50_ns, 50), (tab.p95_ns, 95), (tab.p99_ns, 99)):
        assert col[0] == pytest.approx(np.percentile(durs, q))
    assert tab.share.sum() == pytest.approx(1.0) and tab.share[0] == pytest.approx(20_000 / 28_500)
    assert tab.flops_per_s[0] == pytest.approx(1e6 * 1e9)  # summed FLOPs over summed time
    assert tab.bytes_per_s[0] == pytest.approx(10 * 1e9)  # from the op's shape
    assert tab.bytes_per_s[1] == pytest.approx(8_000_000 / 8_000 * 1e9)  # the copy's size
    assert np.isnan(tab.flops_per_s[2]) and np.isnan(tab.bytes_per_s[2])
    assert tab.bottleneck[1] == "transfer"
    assert sorted(tab.slices_of(0).tolist()) == sorted(tab.ids[tab.group == 0].tolist())
    assert len(tab.slices_of(0)) == 5


def test_by_lane_and_by_phase_follow_the_launching_call():
    src = StatsSource(_trace())
    lanes = src.table("lane")
    assert lanes.keys == ["device 0 · matrix", "device 0 · DMA 0", "device 0 · vector"]
    phases = src.table("phase")
    got = dict(zip(phases.keys, phases.count.tolist(), strict=True))
    # gemm 0-2 launched in prefill (t < 50 µs), 3-4 in decode; softmax has no launch: its start (90 µs) is
    # in decode; the copy starts in prefill
    assert got == {"prefill": 4, "decode": 3}
    assert NO_PHASE not in got


def test_window_keeps_the_slices_that_overlap_it():
    src = StatsSource(_trace())
    tab = src.table("name", (59_000, 61_000))  # gemm at 40-41 µs out; 60-62 µs in; copy out
    assert tab.keys == ["gemm"] and tab.count.tolist() == [1] and tab.window == (59_000, 61_000)
    assert src.table("name", (200_000, 300_000)).keys == []
    with pytest.raises(ValueError):
        src.table("colour")


@pytest.mark.parametrize("few", [True, False])
def test_group_percentiles_match_numpy_in_every_branch(monkeypatch, few):
    if not few:
        monkeypatch.setattr(stats, "_FEW_GROUPS", 0)  # the packed-sort branch
    rng = np.random.default_rng(3)
    g = rng.integers(0, 30, 5_000) * 7
    d = rng.integers(0, 10_000, 5_000)
    groups, dense, count, total, (p50, p99) = group_percentiles(g, d, (0.5, 0.99))
    assert np.array_equal(groups[dense], g)
    for i, k in enumerate(groups):
        x = d[g == k]
        assert count[i] == len(x) and total[i] == x.sum()
        assert p50[i] == pytest.approx(np.percentile(x, 50)) and p99[i] == pytest.approx(np.percentile(x, 99))
    # huge group ids take the general path (np.unique, lexsort)
    groups2, *_rest, (p50b, _) = group_percentiles(g + (1 << 40), d, (0.5, 0.99))
    assert np.array_equal(groups2, groups + (1 << 40)) and np.allclose(p50b, p50)


def test_op_stats_of_the_analysis_still_agree():
    t = _trace()
    ops = op_stats(t)
    assert [(s.name, s.count, s.total_ns) for s in ops] == [("gemm", 5, 20_000), ("softmax", 1, 500)]


def test_text_and_csv():
    tab = StatsSource(_trace()).table("name")
    text = format_stats(tab, top=2)
    lines = text.splitlines()
    assert lines[0].startswith("7 slices of device work in 3 names, top 2 shown")
    assert lines[1].split()[:4] == ["name", "count", "total", "mean"]
    assert lines[2].split()[:3] == ["gemm", "5", "20.0"] and "1.00 PFLOP/s" in lines[2]
    rows = list(csv.DictReader(io.StringIO(stats_csv(tab))))
    assert [r["name"] for r in rows] == ["gemm", "H2D", "softmax"]
    assert rows[0]["total_ns"] == "20000" and rows[2]["flops_per_s"] == ""


def test_cli_stats(tmp_path, capsys):
    path = tmp_path / "s.h5"
    write_capture(_trace(), path)
    assert main(["stats", str(path), "--by", "lane"]) == 0
    assert "device 0 · matrix" in capsys.readouterr().out
    assert main(["stats", str(path), "--csv", "--window", "0:45000"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["name"]: int(r["count"]) for r in rows} == {"gemm": 1, "H2D": 1}
    assert main(["stats", str(path), "--window", "9:3"]) == 2
    assert "the end must come after the start" in capsys.readouterr().err
