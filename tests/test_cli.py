"""The accelview command: info in text and JSON, the headless message, the demo capture."""

from __future__ import annotations

import json
import subprocess
import sys

from accelview.app.cli.main import demo_capture, main
from accelview.model.loader import load_trace
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture
from accelview.model.text.summary import format_summary, summarize
from accelview.model.text.values import MISSING
from factories import empty_trace, tiny_trace


def test_info_text(tmp_path, capsys):
    path = tmp_path / "t.h5"
    write_capture(tiny_trace(), path)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "duration   46.0 µs" in out  # as every output prints a duration (model/text/values.py)
    assert "hôst-α" in out
    assert "runtime API" in out and "exec unit" in out


def test_info_text_of_an_empty_trace_says_what_is_missing():
    text = format_summary(summarize(empty_trace()))
    assert text.splitlines()[:5] == ["empty", "  duration   0 ns", f"  hosts      {MISSING}", f"  devices    {MISSING}",
                                     "  tracks 0  slices 0  flows 0  counter samples 0  instants 0"]
    assert "ops with counters" not in text


def test_info_json_counts_per_track_kind(tmp_path, capsys):
    path = tmp_path / "t.h5"
    write_capture(tiny_trace(), path)
    assert main(["info", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["slices"] == 6 and s["flows"] == 3 and s["counter_samples"] == 10 and s["instants"] == 1
    assert s["op_counters"] == 0  # a capture from another tool: no device-reported op counters
    assert s["devices"] == [0] and s["hosts"] == ["hôst-α"]
    assert s["per_track_kind"]["runtime API"] == {"tracks": 1, "slices": 3, "flows": 2, "counter_samples": 0}
    assert s["per_track_kind"]["counter"]["counter_samples"] == 10
    assert s["duration_ns"] == 46_000
    assert s["metadata"]["device_spec"]["pcie_gen"] == 5


def test_without_a_display_the_app_says_how_to_use_the_cli(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "accelview.app.cli", "--demo"], env=env, capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stderr.count("\n") == 1 and "no display" in r.stderr and "accelview analyze" in r.stderr


def test_demo_capture_ships_and_is_valid():
    trace = load_capture(demo_capture())
    assert trace.self_check() == []
    assert len(trace.slices) > 1000 and len(trace.flows) > 0 and len(trace.counters) > 0


def test_convert_round_trip_through_chrome_json(tmp_path, capsys):
    src = tmp_path / "t.h5"
    write_capture(tiny_trace(), src)
    js = tmp_path / "t.json.gz"
    back = tmp_path / "back.h5"
    assert main(["convert", str(src), str(js)]) == 0
    assert main(["convert", str(js), str(back)]) == 0
    a, b = load_capture(src), load_capture(back)
    assert len(a.slices) == len(b.slices) and len(a.flows) == len(b.flows) and len(a.counters) == len(b.counters)
    assert main(["convert", str(src), str(js)]) == 2  # exists: refused without --force
    assert "already exists" in capsys.readouterr().err
    assert main(["convert", str(src), str(tmp_path / "x.txt")]) == 2
    bare = tmp_path / "bare.json"  # as a profiler without counters records it
    assert main(["convert", str(src), str(bare), "--no-counters"]) == 0
    assert len(load_trace(bare).counters) == 0 < len(a.counters)
    assert main(["convert", str(src), str(tmp_path / "bare.h5"), "--no-counters"]) == 2
    assert "--no-counters writes Chrome JSON" in capsys.readouterr().err


def test_render_writes_a_png_without_a_display(tmp_path, capsys):
    src = tmp_path / "t.h5"
    write_capture(tiny_trace(), src)
    out = tmp_path / "shot.png"
    assert main(["render", str(src), "--out", str(out), "--size", "800x400", "--window", "0:50000", "--timing"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "paint ms per frame" in capsys.readouterr().out
    assert main(["render", str(src), "--out", str(out), "--window", "5:1"]) == 2


def test_info_counts_the_ops_a_device_reported_counters_for(capsys):
    demo = demo_capture()
    assert main(["info", str(demo), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["op_counters"] == s["per_track_kind"]["exec unit"]["slices"] > 0  # every op on a unit
    assert main(["info", str(demo)]) == 0
    assert f"ops with counters {s['op_counters']:,}" in capsys.readouterr().out
