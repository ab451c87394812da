"""The counter strips a trace opens with (issue 22, defect 4): a simulator capture shows matrix
and vector busy, HBM and PCIe bandwidth; a trace without them shows series that draw a line."""

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

from accelview.app.counter_list import CounterListModel
from accelview.app.state import ViewState
from accelview.model.analysis.metrics.defaults import Series, default_strips
from accelview.model.loader import load_trace

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo.h5"


def _shown(trace) -> list[str]:
    state = ViewState()
    model = CounterListModel(state)
    state.set_trace(trace)
    return [model.entries[r].label for r in model.checked]


def test_a_simulator_capture_opens_with_busy_units_and_bandwidths(qapp) -> None:
    shown = _shown(load_trace(DEMO))
    assert len(shown) == 4
    assert shown[0].endswith("matrix busy") and shown[1].endswith("vector busy")
    assert shown[2].startswith("hbm_bandwidth") and shown[3].startswith("pcie_h2d_bandwidth")


def test_an_imported_gpu_trace_opens_with_its_sampled_series(qapp, tmp_path) -> None:
    counter = [{"ph": "C", "name": n, "pid": p, "ts": ts, "args": {"v": v}}
               for n, p, ts, v in (("lonely", 0, 50, 1), ("host RSS", 1, 0, 5), ("host RSS", 1, 90, 6),
                                   ("GPU 0 Memory", 0, 0, 1), ("GPU 0 Memory", 0, 100, 2))]
    kernel = {"ph": "X", "name": "sgemm", "pid": 0, "tid": 7, "ts": 10, "dur": 100, "cat": "kernel"}
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"traceEvents": [kernel, *counter]}))
    shown = _shown(load_trace(path))
    assert set(shown[:2]) == {"host RSS", "GPU 0 Memory"} and shown[2:] == ["lonely"]


def test_the_rule_puts_device_counters_before_the_hosts_and_skips_empty_ones() -> None:
    series = [Series("process RSS", block="host", samples=50), Series("device 0 queue 0 depth", samples=9),
              Series("process CPU", block="host", samples=1), Series("nothing", samples=0)]
    assert default_strips(series) == [1, 0, 2]
    sim = [*series, Series("device 1 matrix busy", samples=9), Series("pcie_d2h_bandwidth (dev 1)",
                                                                       metric="pcie_d2h_bandwidth", samples=9)]
    assert default_strips(sim) == [4, 5]



def test_one_device_with_host_counters_names_its_metrics_without_a_device_suffix(qapp, tmp_path) -> None:
    from accelview.app.cli.main import main

    out = tmp_path / "gemm.h5"
    script = Path(__file__).resolve().parents[2] / "resources" / "examples" / "gemm.py"
    assert main(["profile", str(script), "-o", str(out)]) == 0
    trace = load_trace(out)
    host = [t for t in trace.counter_tracks.track.tolist() if int(trace.tracks.device[t]) < 0]
    assert host, "a profiled script records host metrics"
    state = ViewState()
    model = CounterListModel(state)
    state.set_trace(trace)
    derived = [e.label for e in model.entries if e.metric]
    assert derived and not any("(dev " in label for label in derived)
