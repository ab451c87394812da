"""Faults during a capture (issue 23): names UTF-8 cannot hold, damaged spools, records left
in a script that stops calling the runtime, kills at any instant, full disks, hangs and
unbounded options. What was recorded survives each of them."""

from __future__ import annotations

import os

import pytest
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.runner import CaptureService
from accelview.model.store.reader import load_capture
from accelview.model.strings import StringTable, encode_strings, valid_text
from profile_scripts import api_slices, write_script


def test_text_utf8_cannot_hold_is_escaped_and_kept_distinct() -> None:
    raw = os.fsdecode(b"k\xff\xfe")
    assert valid_text(raw) == "k\\xff\\xfe" and valid_text("x\ud800y") == "x\\ud800y"
    assert valid_text("plain é") == "plain é"
    blob, offsets = encode_strings(["", raw, "k\\xff\\xfe", "ok"])  # the escaped form is taken already
    back = StringTable.from_arrays(blob, offsets).strings()
    assert back[2:] == ["k\\xff\\xfe", "ok"] and back[1].startswith("k\\xff\\xfe") and back[1] != back[2]


@pytest.mark.parametrize("live", [False, True], ids=["spooled", "live"])
def test_names_and_arguments_that_are_not_utf8_are_stored_escaped(tmp_path, live) -> None:
    """os.fsdecode of a non-UTF-8 file name gives lone surrogates: a name, a range, a graph,
    the script's own file name and its arguments made of them are escaped, never fatal."""
    script = write_script(tmp_path, """\
        name = os.fsdecode(b"k\\xff\\xfe")
        for _ in range(5):
            dev.launch("gemm", m=64, n=64, k=64, name=name)
        with sim.annotate(os.fsdecode(b"r\\xff")):
            dev.launch("gemm", m=64, n=64, k=64, name="x\\ud800y")
        dev.synchronize()
        """, name=os.fsdecode(b"w\xff.py"))
    out = tmp_path / "names.h5"
    result = CaptureService(CaptureConfig(output=str(out), live=live, flush_events=4),
                            [str(script), "1", os.fsdecode(b"\xff\xfe")]).run()
    assert result.complete, result.reason
    trace = load_capture(out)
    assert len(api_slices(trace, "launch k\\xff\\xfe")) == 5 and len(api_slices(trace, "launch x\\ud800y")) == 1
    assert "r\\xff" in trace.strings.strings()
    assert trace.metadata["profile"]["argv"][-1] == "\\xff\\xfe" and "w\\xff.py" in trace.metadata["profile"]["target"]
    assert trace.self_check() == []
