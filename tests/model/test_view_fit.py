"""Issue 22 defect 16, headless: a new trace opens fitted to its activity, and with device lanes
its CPU processes fold to one summary row so every GPU is on screen."""

from __future__ import annotations

from accelview.model import TrackKind
from accelview.model.view.fit import activity_window, default_collapsed
from accelview.model.view.lanes import SUMMARY, LaneLayout
from accelview.model.view.lod import TraceLOD
from factories import busy_trace
from kineto_traces import imported, needs_traces

TWO_RANKS = "a100_128rank_sampled"


def test_activity_ignores_the_profiler_span_and_lone_outliers():
    assert activity_window(busy_trace()) == (5_000_000_000, 5_002_000_000)
    assert activity_window(busy_trace(outlier_at=9_000_000_000)) == (5_000_000_000, 5_002_000_000)
    # A slice close to the rest is activity, not an outlier.
    assert activity_window(busy_trace(outlier_at=5_002_100_000)) == (5_000_000_000, 5_002_101_000)


@needs_traces
def test_two_rank_trace_fits_its_activity_and_shows_every_gpu():
    trace = imported(TWO_RANKS)
    lo, hi = trace.time_bounds()
    a, b = activity_window(trace)
    assert hi - lo > 3_000_000_000 and b - a < 1_300_000_000  # 3.37 s of file, 1.24 s of work
    folded = default_collapsed(trace)
    kind = trace.tracks.kind
    assert folded and all(int(kind[t]) == TrackKind.PROCESS for t in folded)
    layout = LaneLayout(trace, TraceLOD(trace, origin=lo), collapsed=folded)
    gpus = [t for t in range(len(kind)) if int(kind[t]) == TrackKind.GPU_STREAM]
    assert max(layout.lane_of(t, 0).y for t in gpus) < 700  # GPU 1's last stream above the fold
    summaries = [ln for ln in layout.lanes if ln.depth == SUMMARY]
    assert {ln.track for ln in summaries} == folded
    assert all(layout.summary[t] for t in folded)  # each folded process sums its threads


def test_cpu_only_trace_keeps_its_processes_open():
    assert default_collapsed(busy_trace()) == set()
