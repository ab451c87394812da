"""The generated corpus of hostile traces (hostile_traces.py) through every reader and command:
each case ends in the one line it names (exit 2, no traceback) or loads, with its import
statistics counting what was skipped, and a load converts to a capture that reads back."""

from __future__ import annotations

import pytest
from accelview.app.cli.main import main
from accelview.model.loader import load_trace
from hostile_traces import CASES

COMMANDS = ("info", "analyze", "convert")  # each case goes through one of them, in turn, and the loader


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_trace(tmp_path, case, capsys):
    spec = CASES[case]
    path = spec.make(tmp_path)
    command = COMMANDS[list(CASES).index(case) % len(COMMANDS)]
    if spec.error is None:
        trace = load_trace(path)
        assert trace.self_check() == []
        stats = trace.metadata["import_stats"]
        for key, least in spec.stats.items():
            assert stats.get(key, 0) >= max(least, 1), (key, stats)
    out_h5 = tmp_path / "out.h5"
    argv = {"info": ["info", str(path)], "analyze": ["analyze", str(path)],
            "convert": ["convert", str(path), str(out_h5)]}[command]
    status = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if spec.error is not None:  # the CLI's one line is the loader's CaptureError (the app shows the same)
        assert status == 2 and out == "", (argv, err)
        assert err.startswith(f"accelview: {path}: ") and spec.error in err and err.count("\n") == 1, err
        return
    assert status == 0, (argv, err)
    if command == "info" and spec.stats:
        assert "import stats" in out and all(k.replace("_", " ") in out for k in spec.stats)
    if command == "convert":  # what convert writes reads back as the same trace
        again = load_trace(out_h5)
        assert len(again.slices) == len(trace.slices) and len(again.tracks) == len(trace.tracks)


@pytest.mark.parametrize("case", list(CASES)[::10])  # one in ten: render shares the loader with the rest
def test_render_hostile_trace(tmp_path, case, capsys):
    spec = CASES[case]
    path = spec.make(tmp_path)
    png = tmp_path / "shot.png"
    status = main(["render", str(path), "--out", str(png), "--size", "320x200"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if spec.error is not None:
        assert status == 2 and spec.error in err and err.count("\n") == 1 and not png.exists()
    else:
        assert status == 0 and png.stat().st_size > 0


def test_timestamps_whose_fractions_float64_rounds_away_are_read_exactly(tmp_path):
    """Near 2**51 µs float64 steps by 0.25: x.999 reads as a whole number, so the fraction is
    found in the text (the fuzzed Chrome round trip found counters 1 ns off)."""
    path = tmp_path / "t.json"  # written as text: json.dumps would round the numbers as float64 does
    path.write_text('{"traceEvents":[{"ph":"C","pid":1,"ts":1999999999999999.999,"name":"c","args":{"v":1}},'
                    '{"ph":"i","pid":1,"tid":1,"ts":2000000000000000.010,"name":"i"}]}')
    trace = load_trace(path)
    assert trace.counters.ts_ns.tolist() == [1999999999999999999]
    assert trace.instants.ts_ns.tolist() == [2000000000000000010]
