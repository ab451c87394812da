"""The analysis report as text: its sections in order, every duration, share and count printed by
the shared value formatters, and ``top`` bounding what is listed."""

from __future__ import annotations

from accelview.model.analysis.report import analyze
from accelview.model.text.report import format_report
from test_analysis_passes import _base, _launch


def _steps(n: int = 3, name: str = "gemm"):
    """``n`` annotated 10 µs steps, each launching one 8 µs op (``name``, no counters) 1 µs into the step."""
    b, api, q, _pcie, mxu = _base()
    thread = 1  # the "main" host thread of _base
    for k in range(n):
        b.add_slice(thread, k * 10_000, 10_000, f"step {k}")
        b.add_slice(thread, k * 10_000 + 100, 50, "tokenize")  # phases are annotations that enclose work
        _launch(b, api, q, mxu, k * 10_000, k * 10_000 + 1_000, 8_000, name)
    trace = b.build()
    trace.source = "steps.h5"
    return analyze(trace)


def test_sections_in_order_with_one_format_for_each_value():
    text = format_report(_steps())
    lines = text.splitlines()
    assert lines[0] == "steps.h5: 30.0 µs, 3 device ops, 2 idle gaps"
    heads = [ln for ln in lines if ln and not ln.startswith(" ")]
    assert heads[1:] == ["Findings (by time lost)", "Where device time went (verdict: compute)", "Phases",
                         "Top ops by total time", "Device lanes busy: matrix 0 80%",
                         "Critical path (29.0 µs): waiting 67.4%, exec unit 27.6%, runtime API 4.8%, "
                         "driver queue 0.2%"]
    # The finding's own message prints its durations and shares like the table below it.
    assert ("  1. [high] launch-bound: the device idled 4.00 µs (13% of the run) waiting for the host to submit work; "
            "100% of ops are shorter than 20.0 µs (median 8.00 µs)") in lines
    assert "     at 9.00 µs – 21.0 µs; fix: submit fewer" in text  # times from the trace start
    assert "  compute             24.0 µs  85.7%" in lines and "  host                4.00 µs  14.3%" in lines
    assert "  " + "step 1".ljust(41) + "     10.0 µs       80.0%     20.0%  compute" in lines
    assert ("  " + "gemm".ljust(41) + "        3     24.0 µs    8.00 µs    8.00 µs    8.00 µs    8.00 µs"
            "  100.0%") in lines


def test_top_bounds_findings_phases_and_ops():
    text = format_report(_steps(5), top=1)
    assert "  step 0 " in text and "  step 1 " not in text
    assert "  1. [" in text and "  2. [" not in text


def test_no_findings_and_a_gpu_section():
    r = _steps()
    r.findings = []
    r.gpu = {
        "temporal_breakdown": [{"rank": 0, "span": 2_000_000, "compute": 1_000_000, "communication": 500_000,
                                "memory": 0, "other": 0, "idle": 500_000}],
        "idle_by_stream": [{"rank": 0, "stream_name": "stream 7", "total": 400_000, "host_wait": 100_000,
                            "kernel_wait": 300_000, "other": 0}],
        "comm_compute_overlap": [{"rank": 0, "ratio": 0.125}, {"rank": 1, "ratio": None}],
    }
    lines = format_report(r).splitlines()
    assert lines[lines.index("Findings (by time lost)") + 1] == "  none"
    assert "     0      2.00 ms     50.0%     25.0%      0.0%      0.0%     25.0%" in lines
    assert "     0 stream 7                      400 µs      25.0%        75.0%     0.0%" in lines
    assert "  rank 0: 12.5% of communication overlapped compute" in lines
    assert not any(ln.startswith("  rank 1:") for ln in lines)


def test_the_headline_says_when_there_is_no_device_and_why_ops_are_unclassed():
    from pathlib import Path

    from accelview.model import TraceBuilder, TrackKind
    from accelview.model.loader import load_trace
    from accelview.model.text.report import device_time_headline

    b = TraceBuilder()
    thread = b.add_track("main", TrackKind.HOST_THREAD, host="h")
    b.add_slice(thread, 0, 1_000, "forward")
    assert device_time_headline(analyze(b.build())) == "no device work in this trace"
    # Without counters, an op named like a GEMM is classed by its name, and the headline says so.
    assert device_time_headline(_steps()) == "device time mostly compute (no hardware counters: classed by name 100.0%)"
    unclassed = device_time_headline(_steps(name="op 7"))  # a name no family matches, no shapes
    assert unclassed == ("85.7% of device time unclassed: the trace has no hardware counters, and names, shapes "
                         "and launch parameters that allow no guess")
    demo = Path(__file__).resolve().parents[2] / "resources" / "demo.h5"
    assert device_time_headline(analyze(load_trace(demo))) == "device time mostly memory"
